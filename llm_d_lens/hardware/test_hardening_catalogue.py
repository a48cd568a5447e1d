"""The hostile-profile catalogue: every value the validator used to accept, each refused at its path.

Each case edits one field of a profile that validates (the guide's full example, a bundled
profile, or the full example with a kustomize installer) and asserts the ``PROFILE_INVALID`` code,
the JSON path and a word of the message. The controls at the end prove the bases validate and
that near-misses of each rule (a pinned remote ref, a safe regex) are still accepted.
"""

from __future__ import annotations

import json
import time

import pytest

from llm_d_lens.cli.app import main
from llm_d_lens.testing.plugins import bundled, deep
from llm_d_lens.hardware.errors import ProfileInvalid
from llm_d_lens.hardware.loader import load_profile_file, validate_payload
from llm_d_lens.hardware.test_contract import GUIDE_FULL, GUIDE_MINIMAL


def kustomize_base() -> dict:
    payload = deep(GUIDE_FULL)
    payload["driver"]["installer"] = "kustomize"
    for mode in payload["driver"]["modes"].values():
        mode.pop("chart_version", None)
        mode.pop("repo", None)
        mode.pop("options", None)
    payload["driver"]["modes"]["plugin"]["manifest_ref"] = "github.com/myvendor/plugin//deploy?ref=v1.2.3"
    return payload


BASES = {"full": lambda: deep(GUIDE_FULL), "minimal": lambda: deep(GUIDE_MINIMAL), "kustomize": kustomize_base,
         "intel-xpu": lambda: bundled("intel-xpu"), "nvidia": lambda: bundled("nvidia")}


def edit(base: str, path: tuple, value) -> dict:
    payload = BASES[base]()
    target = payload
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return payload


PLUGIN_CHART = ("driver", "modes", "plugin", "chart_version")
DRA_CHART = ("driver", "modes", "dra", "chart_version")
KUBE = ("driver", "modes", "dra", "min_kubernetes_version")
REF = ("driver", "modes", "plugin", "manifest_ref")
MATCHERS = ("telemetry", "device_metric_sources", "power", "matchers")

CASES: list[tuple[str, str, tuple, object, str, str]] = []  # (name, base, field, value, path, message)

BAD_VERSIONS = {
    "trailing newline": "1.2.3\n", "trailing CR": "1.2.3\r", "trailing tab": "1.2.3\t", "trailing space": "1.2.3 ",
    "leading space": " 1.2.3", "Arabic-Indic digits": "\u0661.\u0662.\u0663", "fullwidth digits": "\uff11.\uff12.\uff13",
    "Devanagari digit": "1.2.\u0969", "NUL": "1.2.3\x00", "latest": "latest", "star": "*", "range": ">=1.0.0",
    "two parts": "1.2", "x part": "1.2.x", "empty pre-release": "1.2.3-", "newline inside": "1.2\n.3",
}
for label, version in BAD_VERSIONS.items():
    for where, field in (("plugin", PLUGIN_CHART), ("dra", DRA_CHART)):
        CASES.append((f"chart version {label} ({where})", "full", field, version,
                      "$." + ".".join(field), "chart_version" if False else ""))

BAD_KUBE = {
    "trailing newline": "1.32.0\n", "Arabic-Indic digits": "\u0661.\u0663\u0662", "fullwidth": "\uff11.\uff13\uff12",
    "trailing space": "1.32 ", "words": "one.32", "empty part": "1..32", "four parts": "1.32.0.1", "NUL": "1.32\x00",
}
for label, version in BAD_KUBE.items():
    CASES.append((f"min_kubernetes_version {label}", "full", KUBE, version, "$.driver.modes.dra.min_kubernetes_version", ""))

BAD_REFS = {
    "ssh URL on a branch": "ssh://git@github.com/myvendor/plugin//deploy?ref=develop",
    "scp-like without ref": "git@github.com:myvendor/plugin//deploy",
    "scp-like on main": "git@github.com:myvendor/plugin//deploy?ref=main",
    "upper-case host without ref": "GitHub.com/myvendor/plugin//deploy",
    "upper-case host on a branch": "GITHUB.COM/myvendor/plugin//deploy?ref=develop",
    "other host without ref": "gitlab.example.org/team/plugin//deploy",
    "https on develop": "https://github.com/myvendor/plugin//deploy?ref=develop",
    "https on a feature branch": "https://github.com/myvendor/plugin//deploy?ref=feature/x",
    "https on Main": "https://github.com/myvendor/plugin//deploy?ref=Main",
    "https with an empty ref": "https://github.com/myvendor/plugin//deploy?ref=",
    "https with two refs": "https://github.com/myvendor/plugin//deploy?ref=v1.2.3&ref=main",
    "https without ref": "https://github.com/myvendor/plugin//deploy",
    "ref with a newline": "https://github.com/myvendor/plugin//deploy?ref=v1.2.3\n",
    "ref 'stable'": "github.com/myvendor/plugin//deploy?ref=stable",
    "ref 'v1'": "github.com/myvendor/plugin//deploy?ref=v1",
    "short hex that is a word": "github.com/myvendor/plugin//deploy?ref=beef",
}
for label, ref in BAD_REFS.items():
    CASES.append((f"remote ref {label}", "kustomize", REF, ref, "$.driver.modes.plugin.manifest_ref", ""))

BAD_MATCHERS = {
    "trailing newline": 'location="gpu"\n', "leading newline": '\nlocation="gpu"', "NUL in name": 'loc\x00ation="gpu"',
    "unicode letter in name": 'locátion="gpu"', "no value": "location=", "unquoted": "location=gpu", "bare name": "location",
    "escape sequence": '\x1b[31mlocation="gpu"',
}
for label, matcher in BAD_MATCHERS.items():
    CASES.append((f"matcher {label}", "intel-xpu", MATCHERS, [matcher], "$.telemetry.device_metric_sources.power.matchers[0]", ""))

BAD_REGEXES = {
    "nested plus": "^(a+)+$", "nested star": "(a*)*", "word and optional space": r"^(\w+\s?)*$", "bounded in unbounded": "(a{1,9})+",
    "unbounded in bounded": "(.*a){12}", "ambiguous alternation": r"(\w|\d\d)*$", "backreference": r"(h100)\1",
    "too long": "a" * 600, "does not compile": "(h100", "a billion repeats": "a{1000000000}",
    "a huge lower bound": "x{5000,}", "a huge counted range": r"\d{1,100000}",
}
REGEX_FIELDS = {
    "aic_system_patterns": (("planning", "aic_system_patterns"), "$.planning.aic_system_patterns[0]"),
    "partition_resource_patterns": (("inventory", "partition_resource_patterns"), "$.inventory.partition_resource_patterns[0]"),
    "runtime_class_matchers": (("deployment", "runtime_class_matchers"), "$.deployment.runtime_class_matchers[0]"),
    "non_device_resource_patterns": (("inventory", "non_device_resource_patterns"), "$.inventory.non_device_resource_patterns[0]"),
}
for label, pattern in BAD_REGEXES.items():
    for field_name, (field, path) in REGEX_FIELDS.items():
        CASES.append((f"regex {label} in {field_name}", "nvidia", field, [pattern], path, "regular expression" if label == "does not compile" else "refused"))

for label, pattern in BAD_REGEXES.items():
    CASES.append((f"regex {label} in resource_id_pattern", "intel-xpu", ("telemetry", "allocation", "resource_id_pattern"),
                  pattern, "$.telemetry.allocation.resource_id_pattern", "regular expression" if label == "does not compile" else "refused"))
for label, key in {"trailing newline": "gfd.enabled\n", "space": "gfd enabled", "index": "gfd[0]", "empty part": "gfd..x",
                   "unicode": "gfd.énabled"}.items():
    CASES.append((f"helm option key {label}", "full", ("driver", "modes", "plugin", "options"), {key: True},
                  "$.driver.modes.plugin.options", ""))

BAD_VARIANTS = {"NUL": "nv\x00idia", "star": "*", "placeholder": "{guide}", "space": "my vendor", "slash": "a/b",
                "dot": ".", "dot dot": "..", "backslash": "a\\b", "newline": "myvendor\n", "leading dash": "-x", "brace": "x}"}
for label, variant in BAD_VARIANTS.items():
    CASES.append((f"upstream_variant {label}", "full", ("upstream_variant",), variant, "$.upstream_variant", ""))

EMPTY_NAMES = [
    ("empty device class", ("device_classes",), [""], "$.device_classes[0]"),
    ("blank device class", ("device_classes",), ["  "], "$.device_classes[0]"),
    ("empty alias", ("accelerator_keys",), ["myvendor", ""], "$.accelerator_keys[1]"),
    ("blank alias", ("accelerator_keys",), [" "], "$.accelerator_keys[0]"),
    ("empty benchmark profile", ("benchmark_profile",), "", "$.benchmark_profile"),
    ("empty evaluation profile", ("evaluation_profile",), "", "$.evaluation_profile"),
    ("empty DRA driver", ("inventory",), {"dra_drivers": [""]}, "$.inventory.dra_drivers[0]"),
]
for label, field, value, path in EMPTY_NAMES:
    CASES.append((label, "full", field, value, path, "empty"))
CASES.append(("empty resource prefix", "full", ("resource_prefixes",), [""], "$.resource_prefixes[0]", "resource prefix"))

CONTROL_TEXT = [
    ("newline in display name", ("display_name",), "MyVendor\nGPU", "$.display_name"),
    ("escape in vendor", ("vendor",), "\x1b[2Jmyvendor", "$.vendor"),
    ("bell in ui label", ("ui", "labels", "vendor"), "My\x07Vendor", "$.ui.labels.vendor"),
    ("DEL in a label key", ("node_label_selector",), {"myvendor.com/gpu\x7f": "true"}, "$.node_label_selector"),
    ("C1 control in upstream vendor", ("upstream_vendor",), "myvendor\x85", "$.upstream_vendor"),
    ("newline in a node selector value", ("deployment", "node_selector"), {"myvendor.com/gpu.present": "true\n"},
     '$.deployment.node_selector["myvendor.com/gpu.present"]'),
    ("tab in a resource name", ("deployment", "resource_name"), "myvendor.com/gpu\t", "$.deployment.resource_name"),
    ("NUL in an overlay root", ("deployment", "overlay_root"), "guides/{guide}/\x00", "$.deployment.overlay_root"),
]
for label, field, value, path in CONTROL_TEXT:
    CASES.append((label, "full", field, value, path, "control character"))

NON_FINITE = [float("nan"), float("inf"), float("-inf")]
for i, value in enumerate(NON_FINITE):
    CASES.append((f"presence timeout {value}", "full", ("presence", "timeout_seconds"), value, "$.presence.timeout_seconds", ""))
    CASES.append((f"schema_version {value}", "full", ("schema_version",), value, "$.schema_version", ""))
    CASES.append((f"ui order {value}", "full", ("ui", "order"), value, "$.ui.order", ""))


# -- issue 26: the guide's no-cross-talk rules, duplicates, sizes and Kubernetes names -------------------

MODES = ("deployment", "modes")
CROSS_TALK = [
    ("dra mode asking another vendor's device class", "full", (*MODES, "dra", "device_class"), "gpu.intel.com",
     "$.deployment.modes.dra.device_class", "not among this profile's device_classes"),
    ("dra mode asking a class outside device_classes", "full", (*MODES, "dra", "device_class"), "gpu2.myvendor.com",
     "$.deployment.modes.dra.device_class", "not among this profile's device_classes"),
    ("plugin mode asking another vendor's resource", "full", (*MODES, "plugin", "resource_names"), ["nvidia.com/gpu"],
     "$.deployment.modes.plugin.resource_names[0]", "outside this profile's resource_prefixes"),
    ("plugin mode asking a second resource outside the prefixes", "full", (*MODES, "plugin", "resource_names"),
     ["myvendor.com/gpu", "amd.com/gpu"], "$.deployment.modes.plugin.resource_names[1]", "outside this profile's resource_prefixes"),
    ("single mode asking another vendor's resource", "minimal", ("deployment", "resource_name"), "nvidia.com/gpu",
     "$.deployment.resource_name", "outside this profile's resource_prefixes"),
    ("top-level device class beside modes outside device_classes", "full", ("deployment", "device_class"), "gpu.intel.com",
     "$.deployment.device_class", "not among this profile's device_classes"),
    ("telemetry joining another vendor's DRA driver", "nvidia", ("telemetry", "allocation", "drivers"), ["gpu.intel.com"],
     "$.telemetry.allocation.drivers[0]", "not among this profile's inventory.dra_drivers"),
    ("nvidia plugin mode asking an intel resource", "nvidia", (*MODES, "plugin", "resource_names"), ["gpu.intel.com/xe"],
     "$.deployment.modes.plugin.resource_names[0]", "outside this profile's resource_prefixes"),
]
DUPLICATES = [
    ("accelerator key twice", "full", ("accelerator_keys",), ["myvendor", "mv", "mv"], "$.accelerator_keys[2]", "listed twice"),
    ("accelerator key twice, other case", "full", ("accelerator_keys",), ["myvendor", "MyVendor"], "$.accelerator_keys[1]", "listed twice"),
    ("device class twice", "full", ("device_classes",), ["gpu.myvendor.com", "gpu.myvendor.com"], "$.device_classes[1]", "listed twice"),
    ("resource prefix twice", "full", ("resource_prefixes",), ["myvendor.com/gpu", "myvendor.com/gpu"], "$.resource_prefixes[1]", "listed twice"),
    ("DRA driver twice", "nvidia", ("inventory", "dra_drivers"), ["gpu.nvidia.com", "gpu.nvidia.com"], "$.inventory.dra_drivers[1]", "listed twice"),
]
SIZES = [
    ("a 100 MB display name", "full", ("display_name",), "x" * 100_000_000, "$.display_name", "too long"),
    ("a 5000-character overlay root", "full", ("deployment", "overlay_root"), "a/" * 2500, "$.deployment.overlay_root", "too long"),
    ("a 300-character display name", "full", ("display_name",), "x" * 300, "$.display_name", "256"),
    ("a 64-character vendor", "full", ("vendor",), "v" * 64, "$.vendor", "63"),
    ("a 64-character accelerator key", "full", ("accelerator_keys",), ["k" * 64], "$.accelerator_keys[0]", "63"),
    ("a 64-character benchmark profile", "full", ("benchmark_profile",), "b" * 64, "$.benchmark_profile", "63"),
    ("a 64-character arch", "full", ("deployment", "arch"), "a" * 64, "$.deployment.arch", "63"),
    ("a 300-character device class", "full", ("device_classes",), ["a" * 300], "$.device_classes[0]", "253"),
    ("a 5000-character node selector key", "full", ("node_label_selector",), {"k" * 5000: "true"}, "$.node_label_selector", "4096"),
]
OVERLAY_ROOTS = {"backslashes up": "..\\..\\{guide}", "backslash inside": "guides\\{guide}/{variant}",
                 "drive letter": "C:/guides/{guide}/{variant}", "space": "guides/{guide} x/{variant}",
                 "dot dot after a placeholder": "guides/{guide}/../{variant}", "home": "~/{guide}"}
KUBE_NAMES = [
    ("empty node-selector key", "full", ("node_label_selector",), {"": "true"}, "$.node_label_selector", "label key"),
    ("empty deployment node-selector key", "full", ("deployment", "node_selector"), {"": "true"}, "$.deployment.node_selector", "label key"),
    ("presence key with two slashes", "full", ("presence", "node_label_selector"), {"a.com/b/c": "true"},
     "$.presence.node_label_selector", "label key"),
    ("node-selector key with an upper-case prefix", "full", ("node_label_selector",), {"MyVendor.com/gpu": "true"},
     "$.node_label_selector", "DNS subdomain"),
    ("node-selector key with a space", "full", ("node_label_selector",), {"myvendor.com/gpu present": "true"},
     "$.node_label_selector", "label key"),
    ("node-selector value with a space", "full", ("deployment", "node_selector"), {"myvendor.com/gpu.present": "yes please"},
     '$.deployment.node_selector["myvendor.com/gpu.present"]', "label value"),
    ("node-selector value of 64 characters", "full", ("node_label_selector",), {"myvendor.com/gpu.present": "v" * 64},
     '$.node_label_selector["myvendor.com/gpu.present"]', "63"),
    ("a wildcard in a nodeSelector that Kubernetes reads literally", "full", ("deployment", "node_selector"),
     {"myvendor.com/gpu.present": "*"}, '$.deployment.node_selector["myvendor.com/gpu.present"]', "label value"),
    ("mode node-selector key empty", "full", (*MODES, "dra", "node_selector"), {"": "x"}, "$.deployment.modes.dra.node_selector", "label key"),
    ("device class with a path", "full", ("device_classes",), ["GPU.ACME.COM/../x"], "$.device_classes[0]", "DNS subdomain"),
    ("mode device class with a path", "full", (*MODES, "dra", "device_class"), "GPU.ACME.COM/../x",
     "$.deployment.modes.dra.device_class", "DNS subdomain"),
    ("device class with upper case", "full", ("device_classes",), ["Gpu.MyVendor.com"], "$.device_classes[0]", "DNS subdomain"),
    ("device class ending in a dot", "full", ("device_classes",), ["gpu.myvendor.com."], "$.device_classes[0]", "DNS subdomain"),
    ("claim request name with an underscore", "full", (*MODES, "dra", "claim_request_name"), "my_gpu",
     "$.deployment.modes.dra.claim_request_name", "DNS-1123 label"),
    ("DRA driver of 64 characters", "nvidia", ("inventory", "dra_drivers"), ["d" * 64], "$.inventory.dra_drivers[0]", "63"),
    ("DRA driver with a slash", "nvidia", ("inventory", "dra_drivers"), ["gpu.nvidia.com/x"], "$.inventory.dra_drivers[0]", "DNS subdomain"),
    ("resource name without a domain", "full", (*MODES, "plugin", "resource_names"), ["gpu"],
     "$.deployment.modes.plugin.resource_names[0]", "domain prefix"),
    ("resource prefix with a path", "full", ("resource_prefixes",), ["myvendor.com/../gpu"], "$.resource_prefixes[0]", "after the slash"),
    ("resource prefix with an upper-case domain", "full", ("resource_prefixes",), ["MyVendor.com/gpu"], "$.resource_prefixes[0]", "DNS subdomain"),
    ("toleration key with a space", "nvidia", ("deployment", "tolerations"), [{"key": "nvidia com/gpu", "operator": "Exists"}],
     "$.deployment.tolerations[0].key", "taint key"),
    ("product label key empty after the slash", "nvidia", ("inventory", "product_labels"), ["nvidia.com/"],
     "$.inventory.product_labels[0]", "empty name"),
    ("count label key with a space", "nvidia", ("inventory", "count_labels"), ["nvidia.com/gpu count"],
     "$.inventory.count_labels[0]", "label key"),
    # fields the guide lists but nothing read (issue 26): removed, and a profile carrying one is told why
    ("telemetry allocation node_labels, read by nothing", "nvidia", ("telemetry", "allocation", "node_labels"),
     ["nvidia.com/gpu.product"], "$.telemetry.allocation.node_labels", "no longer reads it"),
    ("telemetry allocation device_name_pattern, read by nothing", "nvidia", ("telemetry", "allocation", "device_name_pattern"),
     "^gpu-\\d+$", "$.telemetry.allocation.device_name_pattern", "no longer reads it"),
    ("telemetry exporter port_name, read by nothing", "nvidia", ("telemetry", "exporter", "port_name"), "metrics",
     "$.telemetry.exporter.port_name", "no longer reads it"),
]
CASES += CROSS_TALK + DUPLICATES + SIZES + KUBE_NAMES
CASES += [(f"overlay root {label}", "full", ("deployment", "overlay_root"), root, "$.deployment.overlay_root", "relative path")
          for label, root in OVERLAY_ROOTS.items()]
CASES += [("evaluation profile differing from benchmark profile", "full", ("evaluation_profile",), "amd",
           "$.evaluation_profile", "differs from benchmark_profile")]


@pytest.mark.parametrize("name,base,field,value,path,message", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_value_is_refused_at_its_path(name, base, field, value, path, message):
    with pytest.raises(ProfileInvalid) as caught:
        validate_payload(edit(base, field, value), "hostile.json")
    error = caught.value
    assert error.code == "PROFILE_INVALID"
    found: dict[str, list[str]] = {}
    for issue in error.issues:
        found.setdefault(issue.path, []).append(issue.message)
    assert path in found, f"{path} not among {found}"
    assert any(message in text for text in found[path]), found[path]
    problem = json.dumps(error.to_problem(), allow_nan=False).encode("utf-8")
    assert len(problem) < 100_000  # an oversized value is named by its size, never copied into the answer


#: an identity every field of which is this profile's own, but another registered profile's too: refused by
#: ``lens hardware validate`` (and registration) at the identity field, as a registration conflict
REGISTERED_CROSS_TALK = [
    ("another vendor's device class, listed as its own", {"device_classes": ["gpu.intel.com"]},
     {("deployment", "modes", "dra", "device_class"): "gpu.intel.com"}, "$.device_classes"),
    ("another vendor's plugin resource, listed as its own", {"resource_prefixes": ["myvendor.com/gpu", "nvidia.com/gpu"]},
     {("deployment", "modes", "plugin", "resource_names"): ["nvidia.com/gpu"]}, "$.resource_prefixes"),
    ("another vendor's DRA driver", {"inventory": {"dra_drivers": ["gpu.intel.com"]}}, {}, "$.inventory.dra_drivers"),
    ("an overlapping resource prefix", {"resource_prefixes": ["myvendor.com/gpu", "amd.com/"]}, {}, "$.resource_prefixes"),
]


@pytest.mark.parametrize("name,top,nested,path", REGISTERED_CROSS_TALK, ids=[c[0] for c in REGISTERED_CROSS_TALK])
def test_an_identity_another_registered_profile_owns_is_refused_by_validate(name, top, nested, path, tmp_path, capsys):
    payload = {**deep(GUIDE_FULL), **deep(top)}
    payload["telemetry"]["provider_id"] = "declarative"
    for location, value in nested.items():
        target = payload
        for key in location[:-1]:
            target = target[key]
        target[location[-1]] = value
    validate_payload(payload, "alone.json")  # on its own, every name is the profile's own
    file = tmp_path / "crosstalk.json"
    file.write_text(json.dumps(payload))
    code = main(["hardware", "validate", str(file), "-o", "json"])
    [result] = json.loads(capsys.readouterr().out)
    assert code == 1 and not result["valid"]
    assert any(i["path"] == path and i["message"].startswith("registration conflict") for i in result["issues"]), result


def test_the_catalogue_has_at_least_150_cases():
    assert len(CASES) >= 150


@pytest.mark.parametrize("base", sorted(BASES))
def test_every_base_validates(base):
    assert validate_payload(BASES[base](), "base.json").id


@pytest.mark.parametrize("ref", [
    "github.com/myvendor/plugin//deploy?ref=v1.2.3", "https://github.com/myvendor/plugin//deploy?ref=v0.17.4-rc.1",
    "git@github.com:myvendor/plugin//deploy?ref=0123456789abcdef0123456789abcdef01234567", "vendored/kustomize/dir",
])
def test_a_pinned_remote_ref_and_a_local_path_are_accepted(ref):
    assert validate_payload(edit("kustomize", REF, ref), "ok.json")


@pytest.mark.parametrize("pattern", ["^(h100|h200)(_|-|$)", "H100.*PCIE", r"^nvidia\.com/mig-.+$", "(foo|bar)+", r"^gpu-\d+$"])
def test_safe_regexes_are_accepted(pattern):
    patterns = [*bundled("nvidia")["planning"]["aic_system_patterns"], pattern]
    assert validate_payload(edit("nvidia", ("planning", "aic_system_patterns"), patterns), "ok.json")


def test_a_catastrophic_regex_never_runs(tmp_path, capsys):
    """A plugin's ^(a+)+$ made `resolve --aic-system` take 20 s on 28 characters; now it is refused up front."""
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(edit("nvidia", ("planning", "aic_system_patterns"), ["^(a+)+$"])))
    started = time.monotonic()
    code = main(["hardware", "validate", str(path), "-o", "json"])
    assert time.monotonic() - started < 60  # a generous ceiling: only that the check does not run the pattern
    [result] = json.loads(capsys.readouterr().out)
    assert code == 1 and result["issues"][0]["path"] == "$.planning.aic_system_patterns[0]"
    assert "nests one repetition inside another" in result["issues"][0]["message"]


def test_duplicate_keys_are_refused_with_every_path(tmp_path):
    text = json.dumps(GUIDE_FULL)
    text = text.replace('"vendor": "myvendor"', '"vendor": "myvendor", "vendor": "other"', 1)
    text = text.replace('"chart_version": "0.17.4"', '"chart_version": "0.17.4", "chart_version": "latest"', 1)
    path = tmp_path / "twice.json"
    path.write_text(text)
    with pytest.raises(ProfileInvalid) as caught:
        load_profile_file(path)
    assert sorted((i.path, i.message) for i in caught.value.issues) == [
        ("$.driver.modes.plugin.chart_version", "appears twice in one object; only one value can be meant"),
        ("$.vendor", "appears twice in one object; only one value can be meant"),
    ]


def test_one_run_reports_every_problem_of_a_file_and_every_conflict(tmp_path, capsys):
    """One file used to need four runs (schema, rules, values, conflicts), and only the first conflict showed."""
    payload = deep(GUIDE_FULL)
    payload["colour"] = "red"  # schema
    payload["driver"]["modes"]["plugin"]["chart_version"] = "1.2.3\n"  # rule
    payload["display_name"] = "My\nVendor"  # control character
    payload["planning"]["aic_system_patterns"] = ["^(a+)+$"]  # regex
    path = tmp_path / "all.json"
    path.write_text(json.dumps(payload))
    code = main(["hardware", "validate", str(path), "-o", "json"])
    [result] = json.loads(capsys.readouterr().out)
    assert code == 1
    assert {i["path"] for i in result["issues"]} == {
        "$.colour", "$.display_name", "$.driver.modes.plugin.chart_version", "$.planning.aic_system_patterns[0]",
        "$.telemetry.provider_id"}  # the guide's "myvendor" telemetry provider is registered nowhere here

    clash = deep(GUIDE_FULL)
    clash["id"] = "clash"
    clash["accelerator_keys"] = ["clash", "amd", "nvidia"]
    clash["device_classes"] = ["gpu.myvendor.com", "gpu.amd.com", "gpu.nvidia.com"]
    clash["telemetry"]["provider_id"] = "declarative"
    path = tmp_path / "clash.json"
    path.write_text(json.dumps(clash))
    code = main(["hardware", "validate", str(path), "-o", "json"])
    [result] = json.loads(capsys.readouterr().out)
    assert code == 1
    messages = [i["message"] for i in result["issues"]]
    assert all(m.startswith("registration conflict: ") for m in messages)
    assert sum("'amd'" in m for m in messages) >= 2 and sum("'nvidia'" in m for m in messages) >= 2
    assert {i["path"] for i in result["issues"]} >= {"$.accelerator_keys", "$.device_classes"}
