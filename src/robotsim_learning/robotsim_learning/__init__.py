"""robotsim recording, datasets, policies and closed-loop evaluation.

Today: the reactive lidar wanderer (:mod:`.wander`), the demo driver of ``make sim``; the
bag recorder (:mod:`.recorder_node`, :mod:`.bag_writer`) and ``robotsim bag repair`` (:mod:`.bag_repair`).
"""
