# A protocol error: the request is answered "<id> err <code> <message>" and the helper keeps reading.
.class public final Lxagent/Err;
.super Ljava/lang/RuntimeException;

.field public final code:Ljava/lang/String;

.method public constructor <init>(Ljava/lang/String;Ljava/lang/String;)V
    .locals 0
    invoke-direct {p0, p2}, Ljava/lang/RuntimeException;-><init>(Ljava/lang/String;)V
    iput-object p1, p0, Lxagent/Err;->code:Ljava/lang/String;
    return-void
.end method
