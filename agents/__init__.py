"""The node agent's side of the API: the report it posts and the assignments it long-polls, with its
node's own credential (agent/berth_agent.py is the agent). Built on capacity: it reads capacity
through capacity.port alone, and capacity never imports it."""
