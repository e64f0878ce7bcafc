"""The UI's pages, one script each; ``app.py`` runs them through ``st.Page`` (never imported)."""
