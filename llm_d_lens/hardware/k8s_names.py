"""Kubernetes' own name rules, so a profile is refused for a name the API server would refuse.

A profile's label keys, device class names, DRA driver names and resource names end up in
objects Lens applies (a nodeSelector, a ResourceClaimTemplate, container limits) or in selectors
it sends. A name the API server would reject fails there, late and far from the profile; here it
fails at the field that holds it. The rules are the API machinery's (``k8s.io/apimachinery``
``pkg/util/validation``): a DNS-1123 label or subdomain, a qualified name (an optional DNS
subdomain prefix, a slash, a name of at most 63 characters), a label value of at most 63.
Each function answers why a name is refused, or None.
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
#: resource.k8s.io: a DRA driver name is a DNS subdomain of at most 63 characters
DRIVER_NAME_MAX = 63

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z", re.ASCII)
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z", re.ASCII)
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z", re.ASCII)
#: what may follow a resource prefix's slash: the start of a qualified name's name part
_NAME_START = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?\Z", re.ASCII)


def dns_label_problem(name: str, what: str = "a DNS-1123 label") -> str | None:
    if len(name) > DNS1123_LABEL_MAX:
        return f"is longer than {DNS1123_LABEL_MAX} characters; must be {what}"
    if not _DNS1123_LABEL.match(name):
        return f"must be {what}: lower-case letters, digits and '-', starting and ending with a letter or digit"
    return None


def dns_subdomain_problem(name: str, limit: int = DNS1123_SUBDOMAIN_MAX) -> str | None:
    if len(name) > limit:
        return f"is longer than {limit} characters; must be a DNS subdomain"
    if not _DNS1123_SUBDOMAIN.match(name):
        return ("must be a DNS subdomain such as gpu.example.com: lower-case letters, digits, '-' and '.', "
                "each part starting and ending with a letter or digit")
    return None


def qualified_name_problem(key: str, *, prefix_required: bool = False) -> str | None:
    """A label key, a toleration key or an extended resource name: ``[prefix/]name``."""
    prefix, slash, name = key.rpartition("/")
    if not slash and prefix_required:
        return "needs a domain prefix and a slash, e.g. example.com/gpu"
    if slash:
        if not prefix:
            return "has an empty prefix before '/'"
        problem = dns_subdomain_problem(prefix)
        if problem:
            return f"prefix {prefix!r} {problem}"
    if not name:
        return "has an empty name; a label key is [prefix/]name with a name of 1 to 63 characters"
    if len(name) > QUALIFIED_NAME_MAX:
        return f"name part is longer than {QUALIFIED_NAME_MAX} characters"
    if not _QUALIFIED_NAME.match(name):
        return ("name part must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit")
    return None


def label_value_problem(value: str, *, wildcard: bool = False) -> str | None:
    """A label value; with ``wildcard``, ``*`` (the label only has to exist) is allowed too."""
    if wildcard and value == "*":
        return None
    if len(value) > LABEL_VALUE_MAX:
        return f"is longer than {LABEL_VALUE_MAX} characters, the most a label value may have"
    if value and not _QUALIFIED_NAME.match(value):
        return "is not a label value: letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def resource_prefix_problem(prefix: str) -> str | None:
    """A prefix of extended resource names: a domain, a slash, and the start of a name (possibly empty)."""
    domain, slash, rest = prefix.partition("/")
    if not slash:
        return "a resource prefix has a domain and a slash, e.g. vendor.com/gpu"
    problem = dns_subdomain_problem(domain)
    if problem:
        return f"domain {domain!r} {problem}"
    if len(rest) > QUALIFIED_NAME_MAX or not _NAME_START.match(rest):
        return "after the slash come only letters, digits, '-', '_' and '.', starting with a letter or digit"
    return None
