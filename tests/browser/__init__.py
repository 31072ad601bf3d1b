"""Browser-test helpers (lab.py) and the notebook the browser tests open (widgets_demo.ipynb)."""
