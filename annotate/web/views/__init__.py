"""The app's page scripts (Streamlit runs them; app.py lists them). The URL paths of the pages
outside the console (the console's are in admin.PAGES):"""

LABEL_PATH = "label"  # the labelling page, in a maintainer's menu (for annotators it is "/")
HOME_PATH = "home"  # a maintainer's landing page, which opens the console
