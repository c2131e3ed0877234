"""What if: replay demand against a changed copy of a pool, with the real planner, and compare.

demand.py makes the requests (recorded or synthetic), changes.py the changed copy of the pool's
index, engine.py places the requests in arrival order on an in-memory booking book (book.py),
simulation.py ties them to the database (reads only) and checks the inputs; runs.py queues an operator's runs
and is the worker's job (registered in apps.py); views.py, forms.py and charts.py are the pages,
management/commands the `simulate` and `whatif_run` commands. Builds on capacity and inventory;
capacity never imports it.
"""
