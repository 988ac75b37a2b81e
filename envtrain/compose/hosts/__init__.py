"""Registries of what each app can be in a built environment: item host, report, carrier writer."""

from __future__ import annotations

from types import MappingProxyType

from envtrain.compose.hosts import (
    calendar, chat, crm, helpdesk, hr, inventory, invoicing, mail, projects, spreadsheet, wiki, workspace,
)
from envtrain.compose.hosts.base import Carrier, Host, Report

_MODULES = (calendar, chat, crm, helpdesk, hr, inventory, invoicing, mail, projects, spreadsheet, wiki, workspace)


def _collect(kind: type) -> list[type]:
    return [obj for m in _MODULES for obj in vars(m).values()
            if isinstance(obj, type) and issubclass(obj, kind) and obj is not kind and obj.__module__ == m.__name__]


HOSTS: MappingProxyType = MappingProxyType({h.app: h for h in _collect(Host)})
REPORTS: MappingProxyType = MappingProxyType({(r.app, r.kind): r for r in _collect(Report)})
CARRIER_WRITERS: MappingProxyType = MappingProxyType({(c.carrier, c.app): c for c in _collect(Carrier)})
