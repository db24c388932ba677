"""The lab's private MariaDB: Debian's binaries, our own datadir, 127.0.0.1 only.

Ironic on SQLite fails with two concurrent clients ("database is locked"), so the lab
always runs it on MariaDB.
"""

from __future__ import annotations

import subprocess

from lab import process
from lab.config import LabConfig
from lab.ironic import configs
from lab.ironic.install import tool

NAME = "ironic-mariadb"


def sql(cfg: LabConfig, statement: str) -> str:
    return subprocess.run(
        [
            tool("mariadb"),
            f"--socket={configs.mariadb_socket(cfg)}",
            "--batch",
            "--raw",
            "--skip-column-names",
            "-e",
            statement,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def ready(cfg: LabConfig) -> bool:
    if not process.port_open(cfg.host, cfg.ports.mariadb):
        return False
    try:
        sql(cfg, "SELECT 1")
        return True
    except subprocess.CalledProcessError:
        return False


def up(cfg: LabConfig) -> int:
    cnf = configs.mariadb_cnf(cfg)
    datadir = cfg.data("mariadb") / "db"
    if not (datadir / "mysql").is_dir():
        log = cfg.logs / "ironic-mariadb-install.log"
        with open(log, "ab") as out:
            subprocess.run(
                [
                    tool("mariadb-install-db"),
                    f"--defaults-file={cnf}",
                    # root logs in over the socket only; nothing listens beyond loopback anyway
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                check=True,
            )
    pid = process.start(cfg, NAME, [tool("mariadbd"), f"--defaults-file={cnf}"], ready=lambda: ready(cfg), timeout=60)
    # idempotent: every `up` makes sure the database and its user exist
    sql(
        cfg,
        f"CREATE DATABASE IF NOT EXISTS {configs.DB_NAME} CHARACTER SET utf8mb3; "
        f"CREATE USER IF NOT EXISTS '{configs.DB_USER}'@'{cfg.host}' IDENTIFIED BY '{configs.DB_PASSWORD}'; "
        f"GRANT ALL ON {configs.DB_NAME}.* TO '{configs.DB_USER}'@'{cfg.host}'; FLUSH PRIVILEGES;",
    )
    return pid
