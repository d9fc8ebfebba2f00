"""robotsim recording, datasets, policies and closed-loop evaluation.

Today: the reactive lidar wanderer (:mod:`.wander`), the demo driver of ``make sim``.
"""
