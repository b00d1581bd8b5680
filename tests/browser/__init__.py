"""Browser test: a real JupyterLab in headless Chromium."""
