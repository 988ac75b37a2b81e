"""Evaluation: metrics (pass@k, native score, threshold pass, pooled rubric rate), paired
comparison with the sign test, RES's current-state and historical means by depth, reports and
plots, and the ``envtrain eval`` command (``cli.eval_cmd``). matplotlib loads only for plots."""
