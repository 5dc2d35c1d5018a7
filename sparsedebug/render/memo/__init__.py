"""Every output of the memo model: one ``MemoFormat`` class per format behind one registration.

``formats.py`` holds the base class and the registry; ``phrases.py`` the one phrasing function per fact kind;
``markdown.py`` (memo.md), ``terminal.py`` (the walk's one-screen summary), ``json.py`` (the model itself) and
``github.py`` (a CI step summary, also the gate's ``--summary``) are the formats. They read the memo model only.
"""
