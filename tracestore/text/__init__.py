"""Pure text rules for untrusted text, shared by every layer (they import only errors).

* ``neutralize`` -- the one neutralizer for model text in terminals, Markdown, HTML, JSON;
* ``masking`` -- passwords masked in every printed error and URL;
* ``patterns`` -- regular expressions that run over untrusted text, refused when a repeat
  inside a repeat could backtrack for ever (task rules and contracts both check them).
"""
