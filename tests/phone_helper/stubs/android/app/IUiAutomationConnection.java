package android.app;

public interface IUiAutomationConnection {}
