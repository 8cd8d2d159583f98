//! Simulated Android device speaking the real ADB transport protocol (test support and demo backend).
