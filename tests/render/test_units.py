from profiler_kit.render.wording import units


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


def test_no_scientific_notation_anywhere():
    from profiler_kit.render.wording.units import significant

    # hand-checked: significant digits as ``g`` keeps them, without the exponent
    assert significant(11634.2, 4) == "11634" and units.rate(11634.2, "images") == (
        "11634 images/s")
    assert significant(1.5, 3) == "1.5" and significant(123.456, 4) == "123.5"
    assert significant(0.000123, 3) == "0.000123" and significant(999.95, 3) == "1000"
    assert units.duration(1.5e12) == "1500 s" and units.nbytes(3 * 2**40) == "3072 GiB"
    for x in (1.16e4, 2.5e9, 7.3e-6, 123456789.0):
        for digits in (3, 4, 6):
            assert "e" not in significant(x, digits)
            assert abs(float(significant(x, digits)) - x) <= abs(x) * 10 ** (1 - digits)
