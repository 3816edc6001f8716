"""Types of the optional compiled helper of the ingest service's group commit (``ldp/jobs/_synckernel.c``)."""

from typing_extensions import Buffer

def write_synced(*fds_and_data: int | Buffer) -> None:
    """``write_synced(fd0, data0, fd1, data1, ...)``: each pair in order, every byte of ``data`` written to ``fd``,
    then ``fd`` fsynced, the GIL released once for all of it; ``OSError`` at the first failing call."""
