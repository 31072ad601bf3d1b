"""Browser-test helpers (lab.py); the browser tests open lesson 06 (see tests/test_browser.py)."""
