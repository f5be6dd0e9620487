//! ui: see the module plan in README.md (filled in by its issue).
