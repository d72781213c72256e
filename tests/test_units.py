from profiler_kit.render import units


def test_duration_picks_the_largest_fitting_unit():
    assert units.duration(1_234_567) == "1.23 ms"
    assert units.duration(2_500_000_000) == "2.5 s"
    assert units.duration(999) == "999 ns"
    assert units.duration(1_500) == "1.5 µs"
    assert units.duration(None) == "-"


def test_bytes_use_binary_prefixes():
    assert units.nbytes(3 * 2**20) == "3 MiB"
    assert units.nbytes(1536) == "1.5 KiB"
    assert units.nbytes(512) == "512 B"
    assert units.nbytes(5 * 2**30) == "5 GiB"


def test_percent_rate_and_speedup():
    assert units.percent(0.1234) == "12.3 %"
    assert units.signed_percent(-0.25) == "-25.0 %"
    assert units.signed_percent(0.1) == "+10.0 %"
    assert units.rate(1234.7, "images") == "1235 images/s"
    assert units.speedup(1.5) == "1.50×"
    assert units.speedup(float("nan")) == "-"
