"""What if: replay demand against a changed copy of a pool, with the real planner, and compare.

demand.py makes the requests (recorded or synthetic), changes.py the changed copy of the pool's
index, engine.py places the requests in arrival order on an in-memory booking book, and
capacity.services.whatif ties them to the database (reads only) and checks the inputs.
"""
