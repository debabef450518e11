"""The web layer: the ASGI server, its guard and login, page access, rendering, the Streamlit app."""
