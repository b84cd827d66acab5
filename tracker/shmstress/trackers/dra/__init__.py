"""The Kubernetes DRA scheduler claim tracker (see ``tracker.dra.tracker.DraTracker``)."""
