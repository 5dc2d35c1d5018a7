"""HTML renderers: self-contained pages (inline CSS, inline SVG figures, no script, nothing fetched).

``page`` builds the document from figure+table sections and Markdown parts; ``svg``
holds the drawing primitives (SVG written as text, no plotting library); ``figures``
draws each figure from its data; ``sections`` builds that data and its tables from
records; ``bundle`` assembles the bundle page (``report.html``) and the single-run page.
"""
