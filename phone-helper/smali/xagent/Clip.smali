# The clipboard verbs (helper 3): read, set and clear the primary clip as com.android.shell through the same
# IClipboard binder (and the same version-proof `Helper.call`) the paste path of `text` uses. Kept apart from
# Helper.smali so a verb family is one file. The clip is another app's text: it leaves the phone bounded (the
# first CLIP_MAX UTF-16 units, never a lone half of a surrogate pair) and as base64, so nothing in it can break
# the line protocol.
.class final Lxagent/Clip;
.super Ljava/lang/Object;

# the IClipboard proxy, or `unavailable <reason>` (the greeting's clip state)
.method static service()Ljava/lang/Object;
    .locals 2
    sget-object v0, Lxagent/Helper;->clip:Ljava/lang/Object;
    if-nez v0, :have
    const-string v0, "unavailable"
    sget-object v1, Lxagent/Helper;->clipState:Ljava/lang/String;
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :have
    return-object v0
.end method

# clip: "clip <B64>" (the first item's text, whole; "clip" alone when it is empty), "cut <B64>" (its first 2048
# UTF-16 units), "none" (no clip, or a first item without text: a URI, an intent). The system answers a read it
# refuses with null too (ClipboardService.getPrimaryClip), i.e. "none"; AOSP lets the shell read in the
# background (its READ_CLIPBOARD_IN_BACKGROUND, api29 ClipboardService.java:271), some vendors may not.
.method static opClip([Ljava/lang/String;)Ljava/lang/String;
    .locals 6
    const/4 v0, 0
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    invoke-static {}, Lxagent/Clip;->service()Ljava/lang/Object;
    move-result-object v0
    const-string v1, "getPrimaryClip"
    const/4 v2, 0
    # api 26..36 android.content.IClipboard#getPrimaryClip(*)
    invoke-static {v0, v1, v2}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    invoke-static {v0}, Lxagent/Clip;->text(Ljava/lang/Object;)Ljava/lang/String;
    move-result-object v0
    if-eqz v0, :none
    const-string v3, "clip "
    invoke-virtual {v0}, Ljava/lang/String;->length()I
    move-result v1
    const/16 v2, 0x800
    if-le v1, v2, :encode
    const-string v3, "cut "
    # a cut between the two halves of a surrogate pair would send half a character
    add-int/lit8 v4, v2, -0x1
    invoke-virtual {v0, v4}, Ljava/lang/String;->charAt(I)C
    move-result v4
    invoke-static {v4}, Ljava/lang/Character;->isHighSurrogate(C)Z
    move-result v4
    if-eqz v4, :cut
    add-int/lit8 v2, v2, -0x1
    :cut
    const/4 v4, 0
    invoke-virtual {v0, v4, v2}, Ljava/lang/String;->substring(II)Ljava/lang/String;
    move-result-object v0
    :encode
    sget-object v1, Ljava/nio/charset/StandardCharsets;->UTF_8:Ljava/nio/charset/Charset;
    invoke-virtual {v0, v1}, Ljava/lang/String;->getBytes(Ljava/nio/charset/Charset;)[B
    move-result-object v0
    invoke-static {}, Ljava/util/Base64;->getEncoder()Ljava/util/Base64$Encoder;
    move-result-object v1
    invoke-virtual {v1, v0}, Ljava/util/Base64$Encoder;->encodeToString([B)Ljava/lang/String;
    move-result-object v0
    invoke-static {v3, v0}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    # an empty text: "clip", without the trailing space the framing forbids
    invoke-virtual {v0}, Ljava/lang/String;->trim()Ljava/lang/String;
    move-result-object v0
    return-object v0
    :none
    const-string v0, "none"
    return-object v0
.end method

# setclip B64: the text (UTF-8, base64) as a plain-text clip labelled "xagent", set as com.android.shell, then
# read back: a write the system refuses returns silently (AOSP ClipboardService.setPrimaryClip: `if
# (!clipboardAccessAllowed(...)) { return; }`), so only the read-back can tell. "" when ours reads back, "unverified"
# when reads answer null (refused too, or nothing there), `denied` when another clip is there.
.method static opSetClip([Ljava/lang/String;)Ljava/lang/String;
    .locals 5
    const/4 v0, 1
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const/4 v0, 2
    aget-object v0, p0, v0
    :try_start
    invoke-static {}, Ljava/util/Base64;->getDecoder()Ljava/util/Base64$Decoder;
    move-result-object v1
    invoke-virtual {v1, v0}, Ljava/util/Base64$Decoder;->decode(Ljava/lang/String;)[B
    move-result-object v1
    :try_end
    .catch Ljava/lang/IllegalArgumentException; {:try_start .. :try_end} :bad
    new-instance v2, Ljava/lang/String;
    sget-object v3, Ljava/nio/charset/StandardCharsets;->UTF_8:Ljava/nio/charset/Charset;
    invoke-direct {v2, v1, v3}, Ljava/lang/String;-><init>([BLjava/nio/charset/Charset;)V
    invoke-static {}, Lxagent/Clip;->service()Ljava/lang/Object;
    move-result-object v0
    const-string v1, "xagent"
    invoke-static {v1, v2}, Landroid/content/ClipData;->newPlainText(Ljava/lang/CharSequence;Ljava/lang/CharSequence;)Landroid/content/ClipData;
    move-result-object v1
    const-string v3, "setPrimaryClip"
    # api 26..36 android.content.IClipboard#setPrimaryClip(*)
    invoke-static {v0, v3, v1}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    const-string v3, "getPrimaryClip"
    const/4 v4, 0
    # api 26..36 android.content.IClipboard#getPrimaryClip(*)
    invoke-static {v0, v3, v4}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    if-nez v0, :read
    const-string v0, "unverified"
    return-object v0
    :read
    invoke-static {v0}, Lxagent/Clip;->text(Ljava/lang/Object;)Ljava/lang/String;
    move-result-object v0
    invoke-virtual {v2, v0}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v0
    if-eqz v0, :refused
    const-string v0, ""
    return-object v0
    :refused
    const-string v0, "denied"
    const-string v1, "the system did not take the clip (another clip reads back)"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :bad
    const-string v0, "bad_request"
    const-string v1, "text is not base64"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
.end method

# The first item's text of a ClipData (an Object, as Helper.call answers), or null.
.method static text(Ljava/lang/Object;)Ljava/lang/String;
    .locals 2
    if-eqz p0, :none
    check-cast p0, Landroid/content/ClipData;
    invoke-virtual {p0}, Landroid/content/ClipData;->getItemCount()I
    move-result v0
    if-gtz v0, :item
    goto :none
    :item
    const/4 v0, 0
    invoke-virtual {p0, v0}, Landroid/content/ClipData;->getItemAt(I)Landroid/content/ClipData$Item;
    move-result-object v0
    if-eqz v0, :none
    invoke-virtual {v0}, Landroid/content/ClipData$Item;->getText()Ljava/lang/CharSequence;
    move-result-object v0
    if-eqz v0, :none
    invoke-interface {v0}, Ljava/lang/CharSequence;->toString()Ljava/lang/String;
    move-result-object v0
    return-object v0
    :none
    const/4 v0, 0
    return-object v0
.end method

# clearclip: see clear.
.method static opClearClip([Ljava/lang/String;)Ljava/lang/String;
    .locals 1
    const/4 v0, 0
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    invoke-static {}, Lxagent/Clip;->service()Ljava/lang/Object;
    move-result-object v0
    invoke-static {v0}, Lxagent/Clip;->clear(Ljava/lang/Object;)V
    const-string v0, ""
    return-object v0
.end method

# clearPrimaryClip (Android 9+); Android 8 has none (AOSP api26 ClipboardService: set and get only), so an empty
# plain-text clip stands for it there. Also what a paste uses when there was no clip before it (helper D8: on 8 it
# left our text on the clipboard).
.method static clear(Ljava/lang/Object;)V
    .locals 4
    :try_clear
    const-string v1, "clearPrimaryClip"
    const/4 v2, 0
    # api 28..36 android.content.IClipboard#clearPrimaryClip(*) (8.x has none: Err, then the empty clip below)
    invoke-static {p0, v1, v2}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    :try_clear_end
    .catch Lxagent/Err; {:try_clear .. :try_clear_end} :no_clear
    return-void
    :no_clear
    const-string v1, "xagent"
    const-string v2, ""
    invoke-static {v1, v2}, Landroid/content/ClipData;->newPlainText(Ljava/lang/CharSequence;Ljava/lang/CharSequence;)Landroid/content/ClipData;
    move-result-object v1
    const-string v3, "setPrimaryClip"
    # api 26..36 android.content.IClipboard#setPrimaryClip(*)
    invoke-static {p0, v3, v1}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    return-void
.end method
