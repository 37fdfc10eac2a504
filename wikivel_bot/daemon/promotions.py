"""The daemon follows promotions: a promoted or rolled-back model links from the next round.

``models promote`` / ``rollback`` and the daemon's own learning job (docs/learning.md) change
``learning.models_dir/registry.json``. Before each link batch the daemon reads which
checkpoint it names; when that changed, the ready linker is rebuilt through the one factory
(``linker.factory.build_ready_linker``, via ``build``), which asks the registry for the
running checkpoint (and with it its operating threshold) at every build, as ``suggest`` and
``link`` do, so they agree without a restart.
A rebuild that fails keeps the linker that ran, says so once, and is tried again at the next
change of the registry.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from wikivel_bot.config import Settings
from wikivel_bot.errors import WikivelError
from wikivel_bot.events import event


class FollowingLinker:
    """The ready linker the daemon links with, rebuilt when the running checkpoint changes.

    :param build: settings in, a ready linker out (``build_ready_linker`` with the label set,
        item images and evidence of the daemon); given the daemon's own settings every time,
        since the factory itself asks the registry what runs.
    :param on_change: told the new ready linker after a rebuild (the daemon's state
        document, so `status` names the linker version that links now).
    """

    def __init__(self, settings: Settings, build: Callable[[Settings], Any],
                 on_change: Optional[Callable[[Any], None]] = None) -> None:
        self.settings = settings
        self.build = build
        self.on_change = on_change
        self._unreadable = ""  # the last registry error logged
        self.running = self._registry_running()
        self.ready = build(settings)

    def _registry_running(self) -> Optional[str]:
        models_dir = self.settings.learning.models_dir
        if not models_dir:
            return None
        from wikivel_bot.learning.registry import read_registry

        running = read_registry(models_dir).get("running")
        return str(running) if running else None

    def refresh(self) -> bool:
        """Rebuild when the registry names another checkpoint; True when it did."""
        try:
            running = self._registry_running()
        except WikivelError as exc:  # an unreadable registry: keep linking with what runs
            # Said once per new error, not before every link batch (every 30 s by default).
            if str(exc) != self._unreadable:
                self._unreadable = str(exc)
                event("learning", "registry-unreadable", level=logging.WARNING, error=str(exc))
            return False
        self._unreadable = ""
        if running == self.running:
            return False
        self.running = running  # tried once per change, not at every batch
        try:
            ready = self.build(self.settings)
        except (WikivelError, OSError, RuntimeError) as exc:  # RuntimeError: torch's (a bad state dict)
            event("learning", "model-not-loaded", level=logging.ERROR, running=running or "none",
                  error=" ".join(str(exc).split()), kept=self.ready.description.version)
            return False
        self.ready = ready
        if self.on_change is not None:
            self.on_change(ready)
        event("learning", "model-loaded", running=running or "linker.checkpoint",
              linker_version=ready.description.version)
        return True

    def link(self, files: Any, rejected: Any) -> Any:
        self.refresh()
        return self.ready.link(files, rejected)

