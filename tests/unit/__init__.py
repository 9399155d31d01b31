"""The unit lane, a package so that its conftest.py (the hermetic fixture) is `unit.conftest`
and `from conftest import ...` in its tests still finds the shared tests/conftest.py: two
conftest modules outside packages are both imported as `conftest`, the later one shadowing."""
