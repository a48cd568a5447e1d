"""The web console ``lens serve`` shows at ``/``: server-rendered pages over the API's own services.

Pages are Jinja2 templates (autoescaped: everything a profile says is a plugin's text), charts are
SVG drawn on the server, and the only script is a small file of Lens' own (keyboard tabs, freshness, conditional re-reads). No
asset comes from anywhere but the server itself.
"""
