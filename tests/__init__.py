"""munjang's tests: one folder per part of src/munjang, shared helpers in tests/helpers.

Every folder is a package, so test modules are imported as `tests.<folder>.<name>` and two folders
may each hold a file of the same name."""
