"""What the benchmarks print about the machine they ran on."""

import platform


def cpu_model():
    """The CPU's model name, as /proc/cpuinfo gives it (Linux), or the platform's word."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"
