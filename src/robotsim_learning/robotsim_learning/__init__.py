"""robotsim recording, datasets, policies and closed-loop evaluation.

Empty until a learning issue lands.
"""
