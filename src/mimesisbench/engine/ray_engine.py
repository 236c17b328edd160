"""The Ray engine: one actor per worker, anywhere on a Ray cluster (see ``docs/ray.md``).

Same contract as the local engine (``mimesisbench.engine.base``), same job inside each actor
(built there by the run's job factory, ``mimesisbench.engine.ray_actor``). The driver (this
process) keeps everything the run directory needs: each actor's node, host and clock offset go
into its ``ReadyInfo``
(:class:`RayReadyInfo`, recorded per worker in the manifest), each actor's samples come back as
bytes with its result and are written into the run directory's part files, so merging is the
coordinator's usual merge of raw samples.

Every wait has a timeout: placement (``placement_timeout_s``; a strict-spread group or an actor
that cannot be placed would otherwise stay pending forever), the prepare handshake (the
coordinator's ready timeout), each actor's heartbeat during the replay (``heartbeat_timeout_s``:
a frozen node or a network partition is noticed well before Ray's own ~60 s), and a run
deadline (the schedule's length after the barrier plus ``deadline_grace_s``) after which every
worker is told to stop. A dead actor (``ActorDiedError``, ``ActorUnavailableError``) ends as
``Crashed`` with a message naming the worker, its node and its host.

Ray is imported only when the engine is used (``prepare``), never at import time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic

from mimesisbench.engine.ray_actor import WorkerActor, schedule_bundle, schedule_identity
from mimesisbench.engine.ray_address import EngineChoice, parse_engine
from mimesisbench.engine.ray_clock import ClockSample, measure
from mimesisbench.engine.ray_placement import actor_options, check_capacity, cluster_view, strict_spread
from mimesisbench.engine.ray_session import RaySession, connect
from mimesisbench.errors import BackendError, ConfigError, EnvironmentProblem, MimesisError
from mimesisbench.jobs import Crashed, EngineEvent, JobFactory, Progress, ReadyInfo, SpecT, WorkerResult

#: how often the driver asks each running actor for its progress (it is also the heartbeat)
PROGRESS_EVERY_S = 0.25


@dataclass(frozen=True)
class RayOptions:
    """How the Ray engine places and watches its actors (runtime options, not saved config)."""

    spread: bool = False
    cpus_per_worker: float = 1.0
    placement_timeout_s: float = 60.0
    heartbeat_timeout_s: float = 30.0
    deadline_grace_s: float = 60.0
    rpc_timeout_s: float = 30.0
    #: None: ship the schedule only to nodes that lack it; True: always (tests); False: never
    ship_schedule: bool | None = None
    #: ship this mimesisbench package to an existing cluster (``py_modules``, offline)
    ship_code: bool = True

    def __post_init__(self) -> None:
        if not self.cpus_per_worker > 0:
            raise ConfigError(f"CPUs per Ray worker must be positive (got {self.cpus_per_worker})")
        for name in ("placement_timeout_s", "heartbeat_timeout_s", "deadline_grace_s", "rpc_timeout_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"Ray engine option {name} must be positive")


@dataclass(frozen=True)
class RayReadyInfo(ReadyInfo):
    """``ReadyInfo`` plus where the worker runs and how its clock compares with the driver's."""

    node_id: str = ""
    node_ip: str = ""
    clock_offset_ns: int = 0
    clock_rtt_ns: int = 0
    clock_corrected: bool = False
    schedule_shipped: bool = False
    last_due_ns: int = 0


@dataclass
class _Slot(Generic[SpecT]):
    """The driver's view of one actor (runtime state)."""

    spec: SpecT
    actor: Any
    locate_ref: Any = None
    where: dict[str, Any] = field(default_factory=dict)
    ready: RayReadyInfo | None = None
    clock: ClockSample | None = None
    run_ref: Any = None
    progress_ref: Any = None
    progress_sent: float = 0.0
    last_heard: float = 0.0
    ended: WorkerResult | Crashed | None = None

    @property
    def index(self) -> int:
        return self.spec.index

    def label(self) -> str:
        if not self.where:
            return f"worker {self.index}"
        return f"worker {self.index} (Ray node {self.where['node_ip']}, host {self.where['host']}, pid {self.where['pid']})"


class RayEngine(Generic[SpecT]):
    """Workers as Ray actors (see the module docstring); ``job_factory`` builds each actor's job
    from its spec (a module-level callable, importable on every node)."""

    def __init__(
        self, job_factory: JobFactory[SpecT], engine: str | EngineChoice = "ray", options: RayOptions | None = None
    ) -> None:
        self._factory = job_factory
        self.choice = parse_engine(engine) if isinstance(engine, str) else engine
        if self.choice.kind != "ray":
            raise ConfigError(f"RayEngine needs a Ray engine, not {engine!r}")
        self.options = options or RayOptions()
        self.session_: RaySession | None = None
        self.slots_: dict[int, _Slot[SpecT]] = {}
        self.startup_s_: float | None = None  # ray.init + placement + actors ready
        self._group: Any = None
        self._pending: list[EngineEvent] = []
        self._started = False
        self._deadline: float | None = None
        self._hard_deadline: float | None = None
        self._deadline_text = ""
        self._t0 = time.monotonic()

    # ------------------------------------------------------------------ helpers

    @property
    def _ray(self) -> Any:
        if self.session_ is None:
            raise RuntimeError("prepare() first")
        return self.session_.ray

    def _live(self) -> list[_Slot[SpecT]]:
        return [s for s in self.slots_.values() if s.ended is None]

    def _end(self, slot: _Slot[SpecT], event: WorkerResult | Crashed, out: list[EngineEvent]) -> None:
        if slot.ended is None:
            slot.ended = event
            out.append(event)

    def _crash(self, slot: _Slot[SpecT], what: str, out: list[EngineEvent], kill: bool = False) -> None:
        self._end(slot, Crashed(slot.index, f"{slot.label()} {what}"), out)
        if kill:
            try:
                self._ray.kill(slot.actor)
            except Exception:  # noqa: BLE001 - the actor may be gone already
                pass

    def _wait_all(self, refs: list[Any], deadline: float) -> list[Any]:
        """Wait until every ref is ready or the deadline passes; returns the refs still pending."""
        pending = list(refs)
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            _, pending = self._ray.wait(pending, num_returns=len(pending), timeout=min(remaining, 1.0))
        return pending

    # ------------------------------------------------------------------ lifecycle

    def prepare(self, specs: Sequence[SpecT]) -> None:
        self._t0 = time.monotonic()
        opt = self.options
        self.session_ = connect(self.choice, embedded_cpus=int(len(specs) * opt.cpus_per_worker + 0.999),
                                ship_code=opt.ship_code)
        ray = self._ray
        check_capacity(cluster_view(ray), len(specs), opt.cpus_per_worker, opt.spread)
        if opt.spread:
            self._group = strict_spread(ray, len(specs), opt.cpus_per_worker, opt.placement_timeout_s)
        remote_cls = ray.remote(WorkerActor)
        identity = schedule_identity(specs[0].schedule_dir) if specs else ""
        for i, spec in enumerate(specs):
            actor = remote_cls.options(**actor_options(i, opt.cpus_per_worker, self._group)).remote(self._factory, spec)
            slot = _Slot(spec=spec, actor=actor)
            slot.locate_ref = actor.locate.remote(identity)
            self.slots_[spec.index] = slot

    def wait_ready(self, timeout_s: float) -> list[ReadyInfo]:
        ray, opt = self._ray, self.options
        from ray.exceptions import GetTimeoutError, RayError

        deadline = time.monotonic() + timeout_s
        slots = list(self.slots_.values())
        placed_by = min(deadline, time.monotonic() + opt.placement_timeout_s)
        pending = set(self._wait_all([s.locate_ref for s in slots], placed_by))
        if pending:
            late = [str(s.index) for s in slots if s.locate_ref in pending]
            raise EnvironmentProblem(
                f"worker(s) {', '.join(late)} were not started on the Ray cluster within "
                f"{min(timeout_s, opt.placement_timeout_s):g} s ({cluster_view(ray).describe()}; each needs "
                f"{opt.cpus_per_worker:g} free CPU and a Python with mimesisbench and Ray of the driver's versions)"
            )
        addresses = {n.get("NodeID"): n.get("NodeManagerAddress", "") for n in ray.nodes()}
        for s in slots:
            try:
                s.where = dict(ray.get(s.locate_ref, timeout=opt.rpc_timeout_s))
            except RayError as exc:
                raise EnvironmentProblem(f"worker {s.index} could not start on the Ray cluster: {_short(exc)}") from None
            s.where["node_ip"] = addresses.get(s.where["node_id"], "?")
        ship = [opt.ship_schedule is True or (opt.ship_schedule is None and not s.where["has_schedule"]) for s in slots]
        bundle_ref = ray.put(schedule_bundle(slots[0].spec.schedule_dir)) if any(ship) else None
        prep = {s.actor.prepare.remote(bundle_ref if shipped else None): s for s, shipped in zip(slots, ship)}
        pending = set(self._wait_all(list(prep), deadline))
        if pending:
            preparing = ", ".join(str(s.index) for ref, s in prep.items() if ref in pending)
            raise BackendError(f"workers not ready after {timeout_s:.0f} s (still preparing: {preparing})")
        infos: list[ReadyInfo] = []
        for (ref, s), shipped in zip(prep.items(), ship):
            try:
                ready, last_due = ray.get(ref, timeout=opt.rpc_timeout_s)
                s.clock = measure(ray, s.actor, opt.rpc_timeout_s)
            except GetTimeoutError:
                raise BackendError(f"{s.label()} did not answer within {opt.rpc_timeout_s:g} s") from None
            except RayError as exc:
                raise BackendError(f"{s.label()} could not prepare: {_short(exc)}") from None
            s.ready = RayReadyInfo(
                **{k: getattr(ready, k) for k in ReadyInfo.__dataclass_fields__},
                node_id=str(s.where["node_id"]),
                node_ip=str(s.where["node_ip"]),
                clock_offset_ns=s.clock.offset_ns,
                clock_rtt_ns=s.clock.rtt_ns,
                clock_corrected=s.clock.corrected,
                schedule_shipped=shipped,
                last_due_ns=int(last_due),
            )
            infos.append(s.ready)
        self.startup_s_ = time.monotonic() - self._t0
        return sorted(infos, key=lambda r: r.index)

    def start_at(self, wall_ns: int) -> None:
        self._started = True
        now = time.monotonic()
        for s in self._live():
            assert s.clock is not None
            s.run_ref = s.actor.run.remote(s.clock.local_barrier(wall_ns))
            s.last_heard = now
        length_ns = max((s.ready.last_due_ns for s in self.slots_.values() if s.ready), default=0)
        if length_ns > 0:
            lead_s = max(0.0, (wall_ns - time.time_ns()) / 1e9)
            self._deadline = now + lead_s + length_ns / 1e9 + self.options.deadline_grace_s
            self._deadline_text = (
                f"the run's deadline passed (schedule length {length_ns / 1e9:.1f} s + grace "
                f"{self.options.deadline_grace_s:g} s after the barrier)"
            )

    def stop(self, reason: str = "stopped", message: str = "stopped by the coordinator") -> None:
        for s in self._live():
            if s.run_ref is None:
                total = s.ready.events if s.ready else 0
                self._end(s, WorkerResult(s.index, "stopped", "stopped before the start", total, 0, None), self._pending)
                continue
            try:
                s.actor.stop.remote(reason, message)
            except Exception:  # noqa: BLE001 - a dead actor is reported by poll()
                pass

    # ------------------------------------------------------------------ events

    def poll(self, timeout_s: float) -> list[EngineEvent]:
        out, self._pending = self._pending, []
        if not self.slots_ or self.session_ is None:
            return out
        ray = self._ray
        from ray.exceptions import RayActorError, RayError

        self._check_deadline(out)
        now = time.monotonic()
        refs: dict[Any, tuple[str, _Slot[SpecT]]] = {}
        for s in self._live():
            if s.run_ref is None:
                continue
            if s.progress_ref is None and now - s.progress_sent >= PROGRESS_EVERY_S:
                s.progress_ref, s.progress_sent = s.actor.progress.remote(), now
            refs[s.run_ref] = ("run", s)
            if s.progress_ref is not None:
                refs[s.progress_ref] = ("progress", s)
        if not refs:
            time.sleep(min(timeout_s, 0.1))
            return out
        ready, _ = ray.wait(list(refs), num_returns=1, timeout=timeout_s)
        if ready:
            ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        for ref in ready:
            kind, s = refs[ref]
            if s.ended is not None:
                continue
            if kind == "run":
                self._finish(s, ref, out)
                continue
            s.progress_ref = None
            try:
                progress = ray.get(ref, timeout=self.options.rpc_timeout_s)
            except RayActorError as exc:
                self._crash(s, _death(exc), out)
                continue
            except RayError:
                continue
            s.last_heard = time.monotonic()
            if isinstance(progress, Progress):
                out.append(progress)
        now = time.monotonic()
        for s in self._live():
            if s.run_ref is not None and now - s.last_heard > self.options.heartbeat_timeout_s:
                self._crash(
                    s, f"stopped answering for {now - s.last_heard:.0f} s (frozen node or network partition?)",
                    out, kill=True,
                )
        return out

    def _check_deadline(self, out: list[EngineEvent]) -> None:
        now = time.monotonic()
        if self._deadline is not None and now > self._deadline and self._hard_deadline is None:
            self.stop("stopped", self._deadline_text)
            self._hard_deadline = now + self.options.rpc_timeout_s
        if self._hard_deadline is not None and now > self._hard_deadline:
            for s in self._live():
                self._crash(s, "did not stop after the run's deadline", out, kill=True)

    def _finish(self, slot: _Slot[SpecT], ref: Any, out: list[EngineEvent]) -> None:
        from ray.exceptions import RayActorError, RayError, RayTaskError

        try:
            result, data = self._ray.get(ref, timeout=self.options.rpc_timeout_s)
        except RayActorError as exc:
            self._crash(slot, _death(exc), out)
            return
        except RayTaskError as exc:
            self._crash(slot, f"failed: {_short(exc)}", out)
            return
        except RayError as exc:
            self._crash(slot, f"was lost: {_short(exc)}", out)
            return
        path = None if data is None else _write_part(Path(slot.spec.parts_dir), slot.index, data)
        extra = dict(result.extra)
        if slot.clock is not None:
            extra.update(clock_offset_ms=slot.clock.offset_ns / 1e6, clock_rtt_ms=slot.clock.rtt_ns / 1e6)
        self._end(slot, replace(result, part_path=path, extra=extra), out)

    def collect(self, timeout_s: float) -> list[WorkerResult | Crashed]:
        deadline = time.monotonic() + timeout_s
        while self._live():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for s in self._live():
                    self._crash(s, f"did not end within {timeout_s:.0f} s", self._pending, kill=True)
                break
            self._pending.extend(self.poll(min(remaining, 0.5)))
        self._pending = []
        return [s.ended for s in sorted(self.slots_.values(), key=lambda s: s.index) if s.ended is not None]

    def close(self) -> None:
        """Kill every actor, release the placement group, shut Ray down if this run started it."""
        session, self.session_ = self.session_, None
        if session is None:
            return
        try:
            if session.ray.is_initialized():
                alive = [s for s in self.slots_.values() if not isinstance(s.ended, Crashed)]
                try:  # best effort, briefly: a private directory left behind is swept by a later actor
                    if alive:
                        refs = [s.actor.cleanup.remote() for s in alive]
                        session.ray.wait(refs, num_returns=len(refs), timeout=5.0)
                except Exception:  # noqa: BLE001 - dead actors, a lost cluster
                    pass
                for s in self.slots_.values():
                    try:
                        session.ray.kill(s.actor)
                    except Exception:  # noqa: BLE001 - already dead
                        pass
                if self._group is not None:
                    from ray.util.placement_group import remove_placement_group

                    try:
                        remove_placement_group(self._group)
                    except Exception:  # noqa: BLE001 - the cluster may be gone
                        pass
        finally:
            session.close()


def _write_part(parts_dir: Path, index: int, data: bytes) -> str:
    parts_dir.mkdir(parents=True, exist_ok=True)
    final = parts_dir / f"worker-{index}.npz"
    tmp = parts_dir / f"worker-{index}.tmp.npz"
    tmp.write_bytes(data)
    os.replace(tmp, final)
    return str(final)


def _death(exc: BaseException) -> str:
    """How an actor was lost: its process died, or it became unreachable (node lost, partition)."""
    import ray.exceptions

    unavailable = getattr(ray.exceptions, "ActorUnavailableError", None)
    if unavailable is not None and isinstance(exc, unavailable):
        return f"became unreachable (its node was lost or cut off): {_short(exc)}"
    return f"died: {_short(exc)}"


def _short(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message (Ray's are long), with its type."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException) and not isinstance(cause, type(exc)):
        exc = cause
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    if isinstance(exc, MimesisError):
        return line[:limit]
    return f"{type(exc).__name__}: {line[:limit]}"
