"""Agent fixtures: an empty node in lab-pool whose agent reports a fixture box (see agent_helpers)."""

from __future__ import annotations

import pytest
from agent_helpers import FIXTURES, NodeAgent, fake_smi

from capacity.waits import WATCH
from identity.tokens import issue_node_token


@pytest.fixture
def node_agent(transactional_db, live_server, make_node, tenant, tmp_path):
    """Return a factory: node_agent(NAME, BOX) makes the empty node and its agent's surroundings."""

    def make(name: str, box: str, url: str | None = None, gpus: int = 0) -> NodeAgent:
        # gpus > 0: the node already holds GPUs of its own (GPU-NAME-i), as a demo node does.
        make_node(name, gpus=gpus, links=None)
        folder = tmp_path / name
        folder.mkdir()
        token_file = folder / "token"
        token_file.write_text(issue_node_token(name).key + "\n")
        return NodeAgent(
            name, url or live_server.url, token_file, fake_smi(folder, FIXTURES / box), folder / "out"
        )

    yield make
    WATCH.stop()
