"""Collection anchor for a campaign run through pytest (``--pyargs harness.campaign_session``).

It holds no tests: with ``--stress-grid`` the plugin adds one item per trial. pytest
needs some argument that every host can import, and this module is installed
wherever shmstress is, so remote xdist workers collect exactly what the controller
expects without any file being copied to them.
"""
