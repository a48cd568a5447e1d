"""The roofline's terms against arithmetic done by hand in each test (the figures are typed in, not computed by Lens)."""

from __future__ import annotations

import msgspec

import pytest

from llm_d_lens.hardware.registry import get_profile
from llm_d_lens.planning import roofline
from llm_d_lens.planning.architecture import from_config
from llm_d_lens.planning.roofline import Speed, speed_from_profile
from llm_d_lens.planning.test_architecture import LLAMA_8B

#: a made-up device with round figures: 1000 TFLOP/s bf16, 2000 GB/s memory, 400 GB/s one way between devices
DEVICE = Speed("test-device", {"bf16": 1000e12}, 2000e9, 400e9, 50e9, "typed in for the test")


def model():
    """Llama-3.1-8B's shapes with a round 8e9 parameters: 32 layers, hidden 4096, 8 KV heads of 128."""
    return from_config(LLAMA_8B, "test", "round-8b", published=8_000_000_000)


def ms(estimate_or_term):
    return estimate_or_term.seconds * 1e3


def test_prefill_is_compute_bound_plus_the_tensor_parallel_all_reduce():
    est = roofline.prefill(model(), 1000, 2, DEVICE, "bf16", weights_per_device=8e9)
    terms = {t.name: t for t in est.terms}
    # compute: 2 x 8e9 params x 1000 tokens = 1.6e13 FLOPs / (2 devices x 1000e12) = 8 ms
    assert ms(terms["prefill_compute"]) == pytest.approx(8.0)
    # weights: 8e9 B / 2000e9 B/s = 4 ms, below the compute: prefill is compute-bound
    assert ms(terms["weights_read"]) == pytest.approx(4.0)
    # all-reduce: 2 a layer x 32 layers x 2 x 1/2 x 1000 tokens x 4096 x 2 B = 524,288,000 B / 400e9 = 1.31072 ms
    assert ms(terms["tp_all_reduce"]) == pytest.approx(1.31072)
    assert ms(est) == pytest.approx(8.0 + 1.31072)
    assert "2 x 8,000,000,000 params x 1,000 tokens" in terms["prefill_compute"].formula


def test_decode_is_the_weights_and_batch_kv_read_plus_the_compute():
    est = roofline.decode_step(model(), 16, 2000, 2, DEVICE, "bf16", weights_per_device=8e9, kv_per_token_per_device=65536)
    terms = {t.name: t for t in est.terms}
    # memory: 8e9 + 16 seqs x 2000 tokens x 65,536 B = 10,097,152,000 B / 2000e9 = 5.048576 ms
    assert ms(terms["decode_memory"]) == pytest.approx(5.048576)
    # compute: 2 x 8e9 x 16 = 2.56e11 FLOPs / 2e15 = 0.128 ms: far below the memory time
    assert ms(terms["decode_compute"]) == pytest.approx(0.128)
    # all-reduce of 16 tokens: 524,288,000 B x 16 / 1000 = 8,388,608 B / 400e9 = 0.02097152 ms
    assert ms(terms["tp_all_reduce"]) == pytest.approx(0.02097152)
    # a decode step adds its bounds (small-batch kernels do not hide one under the other), then the link
    assert ms(est) == pytest.approx(5.048576 + 0.128 + 0.02097152)


def test_a_kernel_that_reads_a_kv_head_once_a_query_head_pays_the_kv_bytes_that_many_times():
    est = roofline.decode_step(model(), 16, 2000, 2, DEVICE, "bf16", 8e9, 65536, kv_reads=4)
    memory = {t.name: t for t in est.terms}["decode_memory"]
    # 8e9 + 4 reads x 16 seqs x 2000 tokens x 65,536 B = 16,388,608,000 B / 2000e9 = 8.194304 ms
    assert ms(memory) == pytest.approx(8.194304)
    assert "x 4 reads (one a query head)" in memory.formula


def test_a_calibration_divides_the_peaks():
    half = msgspec.structs.replace(DEVICE, compute_efficiency=0.5, bandwidth_efficiency=0.25)
    est = roofline.prefill(model(), 1000, 2, half, "bf16", weights_per_device=8e9)
    terms = {t.name: t for t in est.terms}
    assert ms(terms["prefill_compute"]) == pytest.approx(16.0)  # 8 ms at half the peak
    assert ms(terms["weights_read"]) == pytest.approx(16.0)  # 4 ms at a quarter of the bandwidth
    assert ms(est) == pytest.approx(16.0 + 1.31072)  # the interconnect is not calibrated


def test_tp1_has_no_all_reduce_and_an_unknown_link_is_not_counted_but_said():
    assert roofline.all_reduce_term(model(), 1000, 1, DEVICE).seconds == 0.0
    no_link = msgspec.structs.replace(DEVICE, intra_node=None)
    term = roofline.all_reduce_term(model(), 1000, 2, no_link)
    assert term.seconds is None and not term.counted and "publishes no intra-node bandwidth" in term.formula
    est = roofline.prefill(model(), 1000, 2, no_link, "bf16", weights_per_device=8e9)
    assert ms(est) == pytest.approx(8.0)  # the bounds stand, the uncounted link adds nothing


def test_the_all_reduce_adds_its_published_latency_per_ring_hop_to_every_one_of_its_all_reduces():
    # 10 us a call + 1 us a ring step: TP4 has 2 x 3 = 6 steps, so 16 us each, 2 a layer x 32 layers = 64 calls
    lat = msgspec.structs.replace(DEVICE, all_reduce_base=10e-6, all_reduce_hop=1e-6, latency_source="typed in")
    assert roofline.all_reduce_latency(4, lat) == pytest.approx(16e-6)
    assert roofline.all_reduce_latency(4, DEVICE) is None
    # bytes of a decode step of 8 tokens: 64 x 2 x 3/4 x 8 x 4096 x 2 B = 6,291,456 B / 400e9 = 0.01572864 ms
    term = roofline.all_reduce_term(model(), 8, 4, lat)
    assert ms(term) == pytest.approx(0.01572864 + 64 * 0.016)
    assert "64 all-reduces x (10 us + 2 x 3 hops x 1 us) = 1.024 ms latency" in term.formula
    bare = roofline.all_reduce_term(model(), 8, 4, DEVICE)
    assert ms(bare) == pytest.approx(0.01572864) and "latency not counted" in bare.formula
    assert roofline.all_reduce_term(model(), 8, 1, lat).seconds == 0.0  # one device: no collective at all
    step = roofline.decode_step(model(), 8, 1000, 4, lat, "bf16", 2e9, 32768)
    assert ms(step) == pytest.approx(ms(roofline.decode_step(model(), 8, 1000, 4, DEVICE, "bf16", 2e9, 32768)) + 1.024)


def test_the_nvidia_profile_publishes_its_all_reduce_latency_with_a_source():
    speed = speed_from_profile(get_profile("nvidia"), "NVIDIA-H100-80GB-HBM3")
    assert speed is not None and speed.all_reduce_base == pytest.approx(6.6e-6) and speed.all_reduce_hop == pytest.approx(0.6e-6)
    assert "tuning.cc" in speed.latency_source and speed.to_dict()["all_reduce_latency_us"]["hop"] == 0.6
    amd = speed_from_profile(get_profile("amd"), "AMD_Instinct_MI300X_OAM")
    assert amd is not None and roofline.all_reduce_latency(8, amd) == pytest.approx(12.0e-6 + 14 * 0.8e-6)
    assert "rccl" in amd.latency_source
    tpu = speed_from_profile(get_profile("google-tpu"), "tpu-v6e-slice")
    assert tpu is not None and tpu.all_reduce_base is None  # none published with a source: not counted, said so


def test_kv_hand_over_and_expert_all_to_all_by_hand():
    # KV: 4000 tokens x 131,072 B (32 layers x 2 x 8 heads x 128 x 2 B) = 524,288,000 B / 50e9 scale-out = 10.48576 ms
    assert ms(roofline.kv_transfer_term(4000, 131072, DEVICE)) == pytest.approx(10.48576)
    moe = msgspec.structs.replace(model(), experts=8, experts_per_token=2, moe_intermediate_size=14336)
    # 32 MoE layers x 2 (dispatch, combine) x 64 tokens x 2 experts x 4096 x 2 B x 7/8 = 58,720,256 B / 50e9 = 1.17440512 ms
    term = roofline.all_to_all_term(moe, 64, 8, 50e9, "scale-out")
    assert ms(term) == pytest.approx(1.17440512)


def test_compute_dtype_uses_the_8_bit_peak_or_falls_back_with_a_reason():
    fp8 = msgspec.structs.replace(DEVICE, peak_flops={"bf16": 1000e12, "fp8": 2000e12})
    assert roofline.compute_dtype("fp8", fp8)[0] == "fp8"
    assert roofline.compute_dtype("int4", fp8)[0] == "bf16"  # weight-only 4-bit runs 16-bit math
    dtype, why = roofline.compute_dtype("fp8", DEVICE)
    assert dtype == "bf16" and "no published fp8 peak" in why
    none = msgspec.structs.replace(DEVICE, peak_flops={})
    assert roofline.compute_dtype("bf16", none)[0] is None
    assert roofline.prefill(model(), 1000, 1, none, "bf16", 8e9).seconds is None


def test_the_h100_profile_figures_read_one_way():
    speed = speed_from_profile(get_profile("nvidia"), "NVIDIA-H100-80GB-HBM3")
    assert speed is not None
    # the datasheet's NVLink 900 GB/s counts both directions: 450e9 one way; 3.35 TB/s HBM; 989.4 TFLOPS bf16 dense
    assert speed.intra_node == 450e9 and speed.memory_bandwidth == 3350e9 and speed.peak_flops["bf16"] == 989.4e12
    assert speed.scale_out == 50e9  # one 400 Gb/s NIC a GPU, one way
    # vLLM is calibrated on the profile (planning/calibration.json); an engine without points gets the bound, and says so
    assert speed.calibration_source.startswith("planning.calibration.vllm:") and speed.bandwidth_efficiency < 1.0
    bare = speed_from_profile(get_profile("nvidia"), "NVIDIA-H100-80GB-HBM3", "sglang")
    assert bare is not None and bare.compute_efficiency == bare.bandwidth_efficiency == 1.0
    assert "no measured efficiency" in bare.calibration_source
    # a joined product name finds the part that has figures; a product without any has no speed
    assert speed_from_profile(get_profile("nvidia"), "Something, NVIDIA H200").memory_bandwidth == 4800e9
    assert speed_from_profile(get_profile("nvidia"), "NVIDIA-T4") is None
