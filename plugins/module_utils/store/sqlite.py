"""The embedded store: one sqlite file, safe for many processes and threads.

WAL journal, ``BEGIN IMMEDIATE`` for every write (so a read-check-write is one
serialised transaction), one global resourceVersion counter, file mode 0600
(Secrets live here).  Labels and owner uids are indexed in side tables so
selectors and garbage collection do not scan every object.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import json
import os
import sqlite3
import threading
import uuid

from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    AlreadyExists,
    Forbidden,
    Invalid,
    NotFound,
    StoreUnavailable,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, ownership, selectors
from ansible_collections.baremetal.capi.plugins.module_utils.store import common

_SCHEMA = """
CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), rv INTEGER NOT NULL);
INSERT OR IGNORE INTO counter (id, rv) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS objects (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    uid TEXT NOT NULL UNIQUE,
    rv INTEGER NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (kind, namespace, name)
);
CREATE INDEX IF NOT EXISTS objects_ns ON objects (namespace);
CREATE TABLE IF NOT EXISTS labels (
    obj INTEGER NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (obj, key)
);
CREATE INDEX IF NOT EXISTS labels_kv ON labels (key, value);
CREATE TABLE IF NOT EXISTS owners (
    obj INTEGER NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    owner_uid TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS owners_uid ON owners (owner_uid);
CREATE INDEX IF NOT EXISTS owners_obj ON owners (obj);
CREATE INDEX IF NOT EXISTS objects_consumer
    ON objects (kind, namespace, json_extract(body, '$.spec.consumerRef.name'));
"""

# A label requirement as a condition on the labels table (gt/lt are not: they compare numbers).
_LABEL_SQL = {
    selectors.EQUALS: "id IN (SELECT obj FROM labels WHERE key = ? AND value IN ({values}))",
    selectors.IN: "id IN (SELECT obj FROM labels WHERE key = ? AND value IN ({values}))",
    selectors.NOT_EQUALS: "id NOT IN (SELECT obj FROM labels WHERE key = ? AND value IN ({values}))",
    selectors.NOT_IN: "id NOT IN (SELECT obj FROM labels WHERE key = ? AND value IN ({values}))",
    selectors.EXISTS: "id IN (SELECT obj FROM labels WHERE key = ?{values})",
    selectors.NOT_EXISTS: "id NOT IN (SELECT obj FROM labels WHERE key = ?{values})",
}


def _json_path(keys: tuple) -> str:
    """A JSON1 path as a SQL literal; a dotted field path renders as the objects_consumer index expression does
    (common.field_path has refused keys with a double quote)."""
    text = "$" + "".join("." + (k if k.isidentifier() else f'"{k}"') for k in keys)
    return "'" + text.replace("'", "''") + "'"


def _field_expr(keys: tuple, want) -> str:
    """The expression a field filter compares; the same text in a query and in an index, so that SQLite searches
    the index instead of reading every row's JSON."""
    path = _json_path(keys)
    value, kind = f"json_extract(body, {path})", f"json_type(body, {path})"
    if want is common.ABSENT:
        return kind
    if want is common.UNSET:  # 1 when Python would call the value false: absent, null, false, 0, "", [], {}
        return (
            f"(CASE {kind} WHEN 'true' THEN 0 WHEN 'integer' THEN {value} = 0 WHEN 'real' THEN {value} = 0 "
            f"WHEN 'text' THEN {value} = '' WHEN 'array' THEN json_array_length(body, {path}) = 0 "
            f"WHEN 'object' THEN {value} = '{{}}' ELSE 1 END)"
        )
    return value


def _field_sql(keys: tuple, want) -> tuple[str, list]:
    """A field filter (store/common.py) as a condition on the row's JSON body, and its arguments."""
    expr = _field_expr(keys, want)
    if want is common.ABSENT:
        return f"{expr} IS NULL", []
    if want is common.UNSET:
        return f"{expr} = 1", []
    if isinstance(want, tuple):
        if None in want:
            return "(" + " OR ".join(f"{expr} IS ?" for _v in want) + ")", list(want)
        return f"{expr} IN ({', '.join('?' * len(want))})", list(want)
    return f"{expr} IS ?", [want]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _index_for(k: kinds.Kind, namespace, fields: dict) -> str:
    """``INDEXED BY`` the filter index that answers these filters in one namespace, else nothing: without
    statistics SQLite's planner prefers the (kind, namespace) prefix of another index and reads every row."""
    if namespace is None or not k.namespaced:
        return ""
    for name, key, wanted in _FILTER_INDEXES:
        if key == k.key and all(fields.get(keys, _NOTHING) == w for keys, w in wanted.items()):
            return f" INDEXED BY {name}"
    return ""


_NOTHING = object()
_FILTER_INDEXES = [(name, kinds.resolve(kind).key, common.check_fields(f)) for name, kind, f in common.FILTER_INDEXES]


def _filter_indexes() -> str:
    """CREATE INDEX for each of common.FILTER_INDEXES: partial (one kind), equalities first, one-of last."""
    out = []
    for name, key, fields in _FILTER_INDEXES:
        order = sorted(fields.items(), key=lambda item: (isinstance(item[1], tuple), item[0]))
        columns = ", ".join(["namespace", *(_field_expr(keys, want) for keys, want in order), "name"])
        out.append(f"CREATE INDEX IF NOT EXISTS {name} ON objects ({columns}) WHERE kind = {_literal(key)};")
    return "\n".join(out)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SqliteStore:
    kind_name = "sqlite"
    # list(fields=...) on common.INDEXED_FIELDS is answered from an index, not by decoding every object
    indexes_fields = True

    def __init__(self, path: str, adopt: bool = False):
        # adopt: act on objects an upstream controller wrote too (common.guard); nothing but an import of a
        # kubernetes store's objects brings such objects (with their managedFields) into a sqlite file.
        self.adopt = adopt
        self.path = os.path.abspath(os.path.expanduser(path))
        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if not os.path.exists(self.path):
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            os.chmod(self.path, 0o600)
        except OSError as exc:
            raise StoreUnavailable(f"cannot create the sqlite store at {self.path}: {exc}") from exc
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._con().executescript("BEGIN IMMEDIATE;" + _SCHEMA + _filter_indexes() + "COMMIT;")

    # -- connections and transactions ------------------------------------

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            try:
                con = sqlite3.connect(self.path, timeout=120, isolation_level=None, check_same_thread=False)
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA synchronous=NORMAL")
                con.execute("PRAGMA foreign_keys=ON")
                con.execute("PRAGMA busy_timeout=120000")
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"cannot open the sqlite store at {self.path}: {exc}") from exc
            self._local.con = con
            with self._lock:
                self._all.append(con)
        return con

    @contextlib.contextmanager
    def _write(self):
        con = self._con()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            for con in self._all:
                with contextlib.suppress(sqlite3.Error):
                    con.close()
            self._all.clear()
        self._local = threading.local()

    @staticmethod
    def _next_rv(con) -> int:
        con.execute("UPDATE counter SET rv = rv + 1 WHERE id = 1")
        return con.execute("SELECT rv FROM counter WHERE id = 1").fetchone()[0]

    # -- rows ---------------------------------------------------------------

    @staticmethod
    def _ns(kind: kinds.Kind, namespace: str | None) -> str:
        return (namespace or "default") if kind.namespaced else ""

    @staticmethod
    def _load(body: str, rv: int) -> dict:
        obj = json.loads(body)
        obj["metadata"]["resourceVersion"] = str(rv)
        return obj

    def _not_found(self, k: kinds.Kind, name: str, namespace: str | None) -> NotFound:
        where = f"{k.kind} {self._ns(k, namespace) + '/' if k.namespaced else ''}{name}"
        return NotFound(f'{k.plural}.{k.group or "core"} "{name}" not found', obj=where)

    def _row(self, con, kind: kinds.Kind, name: str, ns: str):
        return con.execute(
            "SELECT id, rv, body FROM objects WHERE kind = ? AND namespace = ? AND name = ?", (kind.key, ns, name)
        ).fetchone()

    def _save(self, con, obj_id, kind: kinds.Kind, obj: dict) -> dict:
        """Insert (obj_id None) or replace an object with a new resourceVersion."""
        rv = self._next_rv(con)
        md = obj["metadata"]
        md.pop("resourceVersion", None)
        body = json.dumps(obj, sort_keys=True, separators=(",", ":"))
        ns = md.get("namespace") or ""
        if obj_id is None:
            obj_id = con.execute(
                "INSERT INTO objects (kind, namespace, name, uid, rv, body) VALUES (?, ?, ?, ?, ?, ?)",
                (kind.key, ns, md["name"], md["uid"], rv, body),
            ).lastrowid
        else:
            con.execute("UPDATE objects SET rv = ?, body = ? WHERE id = ?", (rv, body, obj_id))
            con.execute("DELETE FROM labels WHERE obj = ?", (obj_id,))
            con.execute("DELETE FROM owners WHERE obj = ?", (obj_id,))
        con.executemany(
            "INSERT INTO labels (obj, key, value) VALUES (?, ?, ?)",
            [(obj_id, k, v) for k, v in (md.get("labels") or {}).items()],
        )
        con.executemany(
            "INSERT INTO owners (obj, owner_uid) VALUES (?, ?)",
            [(obj_id, r["uid"]) for r in md.get("ownerReferences") or []],
        )
        md["resourceVersion"] = str(rv)
        return obj

    # -- reads ----------------------------------------------------------------

    def get(self, kind, name: str, namespace: str | None = None) -> dict:
        k = kinds.resolve(kind)
        if not name:
            raise Invalid("name is required", obj=k.kind, field="metadata.name")
        row = self._row(self._con(), k, name, self._ns(k, namespace))
        if row is None:
            raise self._not_found(k, name, namespace)
        return self._load(row[2], row[1])

    def _query(self, columns: str, kind, namespace, label_selector, fields):
        """(SQL, args, selector) of a list: every filter but gt/lt label requirements in SQL."""
        k = kinds.resolve(kind)
        sel = selectors.parse(label_selector, where="label_selector")
        fields = common.check_fields(fields)
        # the kind as a literal: a partial index (common.FILTER_INDEXES) is used only when the query names its kind
        sql = f"SELECT {columns} FROM objects{_index_for(k, namespace, fields)} WHERE kind = {_literal(k.key)}"
        args: list = []
        if namespace is not None and k.namespaced:
            sql += " AND namespace = ?"
            args.append(namespace)
        # Every label requirement but gt/lt is answered by the labels index, so that only the objects that
        # match are decoded (host choice among thousands of hosts); gt/lt are checked on the decoded labels.
        for req in sel.requirements:
            where = _LABEL_SQL.get(req.operator)
            if where is None:
                continue
            marks = ", ".join("?" * len(req.values))
            sql += " AND " + where.format(values=marks)
            args += [req.key, *req.values]
        for keys, want in sorted(fields.items(), key=lambda item: item[0]):
            where, values = _field_sql(keys, want)
            sql += " AND " + where
            args += values
        # No ORDER BY: it would make SQLite walk the (kind, namespace, name) index instead of the one that answers
        # the filters (objects_consumer); the callers sort the rows they got.
        return sql, args, sel

    def list(self, kind, namespace: str | None = None, label_selector=None, fields=None) -> list[dict]:
        sql, args, sel = self._query("namespace, name, rv, body", kind, namespace, label_selector, fields)
        out = []
        for _ns, _name, rv, body in sorted(self._con().execute(sql, args)):
            obj = self._load(body, rv)
            if sel.matches(obj["metadata"].get("labels")):
                out.append(obj)
        return out

    def list_keys(self, kind, namespace: str | None = None, label_selector=None, fields=None) -> list[tuple]:
        """(namespace, name) of what ``list`` returns, without decoding the objects (only their labels, when
        the selector has gt/lt)."""
        sel = selectors.parse(label_selector, where="label_selector")
        if all(req.operator in _LABEL_SQL for req in sel.requirements):  # the SQL answers the whole selector
            sql, args, _sel = self._query("namespace, name", kind, namespace, sel, fields)
            return sorted(self._con().execute(sql, args))
        columns = "namespace, name, json_extract(body, '$.metadata.labels')"
        sql, args, _sel = self._query(columns, kind, namespace, sel, fields)
        rows = sorted(self._con().execute(sql, args))
        return [(ns, name) for ns, name, labels in rows if sel.matches(json.loads(labels) if labels else None)]

    # -- writes ---------------------------------------------------------------

    def create(self, obj: dict) -> dict:
        obj, k = common.creatable(obj)
        md = obj["metadata"]
        for key in ("uid", "deletionTimestamp", "creationTimestamp", "generation"):
            md.pop(key, None)
        for key in common.MUTABLE_META:
            if md.get(key) in ([], {}):
                md.pop(key)
        obj["apiVersion"] = k.api_version
        if k.status_subresource and not k.status_on_create:
            obj.pop("status", None)
        if k.kind == "Secret":
            common.merge_string_data(obj)
        with self._write() as con:
            if not md.get("name"):
                md["name"] = common.generate_name(md.pop("generateName"))
            if k.namespaced:
                self._ensure_namespace(con, md["namespace"], obj)
            if self._row(con, k, md["name"], self._ns(k, md.get("namespace"))) is not None:
                raise AlreadyExists(f'{k.plural}.{k.group or "core"} "{md["name"]}" already exists', obj=meta.ref(obj))
            md.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
            if k.kind == "Namespace":
                obj.setdefault("status", {})["phase"] = "Active"
            return self._save(con, None, k, obj)

    def _ensure_namespace(self, con, ns: str, obj: dict) -> None:
        nsk = kinds.resolve("Namespace")
        row = self._row(con, nsk, ns, "")
        if row is None:
            ns_obj = ownership.mark(meta.new("Namespace", ns, namespace=None))
            ns_obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
            ns_obj["status"] = {"phase": "Active"}
            self._save(con, None, nsk, ns_obj)
        elif json.loads(row[2])["metadata"].get("deletionTimestamp"):
            raise Forbidden(
                f"unable to create new content in namespace {ns} because it is being terminated", obj=meta.ref(obj)
            )

    def update(self, obj: dict) -> dict:
        return self._update(obj, status=False)

    def update_status(self, obj: dict) -> dict:
        return self._update(obj, status=True)

    def _update(self, obj: dict, status: bool) -> dict:
        k = common.updatable(obj, status)
        md = obj["metadata"]
        with self._write() as con:
            row = self._row(con, k, md["name"], self._ns(k, md.get("namespace")))
            if row is None:
                raise NotFound(f'{k.plural}.{k.group or "core"} "{md["name"]}" not found', obj=meta.ref(obj))
            obj_id, rv, body = row
            stored = self._load(body, rv)
            common.check_resource_version(obj, rv, k)
            may_mark = common.guard(stored, "update", adopt=self.adopt, get=self.get)
            if status:
                new = copy.deepcopy(stored)
                if obj.get("status") is None:
                    new.pop("status", None)
                else:
                    new["status"] = copy.deepcopy(obj["status"])
            else:
                new = common.merged_update(stored, obj, k)
                new["apiVersion"] = k.api_version
                if may_mark:
                    ownership.mark(new)
            if common.same(new, stored):
                return stored
            if meta.is_deleting(new) and not meta.finalizers(new):
                self._save(con, obj_id, k, new)
                self._remove(con, obj_id, k, new)
                return new
            return self._save(con, obj_id, k, new)

    def delete(self, kind, name: str, namespace: str | None = None) -> dict | None:
        k = kinds.resolve(kind)
        with self._write() as con:
            row = self._row(con, k, name, self._ns(k, namespace))
            if row is None:
                raise self._not_found(k, name, namespace)
            # the guard of a delete asked for; the garbage collection of its dependents is the API server's
            common.guard(self._load(row[2], row[1]), "delete", adopt=self.adopt, get=self.get)
            return self._delete_row(con, row, k)

    def _delete_row(self, con, row, k: kinds.Kind) -> dict | None:
        obj_id, rv, body = row
        obj = self._load(body, rv)
        if k.kind == "Namespace":
            return self._delete_namespace(con, obj_id, obj)
        if meta.finalizers(obj):
            if not meta.is_deleting(obj):
                obj["metadata"]["deletionTimestamp"] = _now()
                obj = self._save(con, obj_id, k, obj)
            return obj
        self._remove(con, obj_id, k, obj)
        return None

    def _delete_namespace(self, con, obj_id, obj) -> dict | None:
        name = obj["metadata"]["name"]
        if not meta.is_deleting(obj):
            obj["metadata"]["deletionTimestamp"] = _now()
            obj.setdefault("status", {})["phase"] = "Terminating"
            obj = self._save(con, obj_id, kinds.resolve("Namespace"), obj)
        rows = con.execute("SELECT id, rv, body, kind FROM objects WHERE namespace = ?", (name,)).fetchall()
        for oid, orv, obody, okind in rows:
            if con.execute("SELECT 1 FROM objects WHERE id = ?", (oid,)).fetchone():
                self._delete_row(con, (oid, orv, obody), kinds.BY_KEY[okind])
        return self._finish_namespace(con, name)

    def _finish_namespace(self, con, name: str) -> dict | None:
        row = self._row(con, kinds.resolve("Namespace"), name, "")
        if row is None:
            return None
        ns_obj = self._load(row[2], row[1])
        if not meta.is_deleting(ns_obj):
            return ns_obj
        if con.execute("SELECT 1 FROM objects WHERE namespace = ? LIMIT 1", (name,)).fetchone():
            return ns_obj
        con.execute("DELETE FROM objects WHERE id = ?", (row[0],))
        return None

    def _remove(self, con, obj_id, k: kinds.Kind, obj: dict) -> None:
        """Remove an object and collect the garbage it leaves, as Kubernetes' GC would."""
        uid = obj["metadata"]["uid"]
        con.execute("DELETE FROM objects WHERE id = ?", (obj_id,))
        dependents = con.execute(
            "SELECT DISTINCT o.id, o.rv, o.body, o.kind FROM owners w JOIN objects o ON o.id = w.obj "
            "WHERE w.owner_uid = ?",
            (uid,),
        ).fetchall()
        for dep_id, dep_rv, dep_body, dep_kind in dependents:
            dep = self._load(dep_body, dep_rv)
            refs = dep["metadata"].get("ownerReferences") or []
            alive = [
                r
                for r in refs
                if r["uid"] != uid and con.execute("SELECT 1 FROM objects WHERE uid = ?", (r["uid"],)).fetchone()
            ]
            dk = kinds.BY_KEY[dep_kind]
            if alive:
                dep["metadata"]["ownerReferences"] = alive
                self._save(con, dep_id, dk, dep)
            elif con.execute("SELECT 1 FROM objects WHERE id = ?", (dep_id,)).fetchone():
                self._delete_row(con, (dep_id, dep_rv, dep_body), dk)
        if k.namespaced:
            self._finish_namespace(con, obj["metadata"]["namespace"])
