"""Haytham's Streamlit review UI: ``app.py`` (navigation), ``views/`` (one page each) and
``components/`` (the pieces they share). Started by ``streamlit run frontend_streamlit/app.py``."""
