"""Seed 001 (Wen & Tammineedi, "Parallelizing Recurrent Neural Networks Using Scan"), chapter 08.

Every ``quote`` is verbatim from /work/shared/seeds/001_*.txt and contains the value as written there.
The seed ran on one GK210 chip of an NVIDIA Tesla K80; its "serial" kernel is serial over time but
parallel over the hidden units (the course's ``method="channels"``), its parallel kernel is parallel
over time as well (reduce / scan / expand).
"""

_K80 = "one GK210 chip of a Tesla K80 (13 SMs)"

ENTRIES = {
    "001.summary.kernel_speedup": dict(
        value=50.0, unit="x", seed="001", where="Summary; Results, speed-up graph",
        conditions=f"parallel-over-time scan kernel vs a kernel serial over time and parallel over the 128 "
                   f"hidden units, T from tens of thousands to millions; {_K80}",
        quote="50x speedup in kernel execution time over a serial implementation"),
    "001.summary.layer_speedup": dict(
        value=11.0, unit="x", seed="001", where="Summary; Results, TensorFlow graph",
        conditions=f"LSTM/SRU/QRNN layers in TensorFlow calling the parallel vs the serial kernel; {_K80}",
        quote="achieve almost 11x speedup in TensorFlow code"),
    "001.phases.reduce": dict(
        value=35.8, unit="%", seed="001", where="Parallelism Limitations",
        conditions=f"share of the scan's time in the reduce kernel, T = 524,288, H = 128; {_K80}",
        quote="Reduction kernel: 2.1230ms (35.8%)"),
    "001.phases.scan": dict(
        value=0.4, unit="%", seed="001", where="Parallelism Limitations",
        conditions=f"share of the scan's time in the scan-of-carries kernel, T = 524,288, H = 128; {_K80}",
        quote="Scan kernel: 24.543us (0.4%)"),
    "001.phases.expand": dict(
        value=63.8, unit="%", seed="001", where="Parallelism Limitations",
        conditions=f"share of the scan's time in the expand kernel, T = 524,288, H = 128; {_K80}",
        quote="Expand kernel: 3.7850ms (63.8%)"),
    "001.bandwidth.gbs": dict(
        value=104.0, unit="GB/s", seed="001", where="Parallelism Limitations",
        conditions=f"the parallel kernel at T = 65,536; {_K80}",
        quote="For a sequence length of 65,536, the kernel achieved 104 GB/s bandwidth"),
    "001.bandwidth.fraction": dict(
        value=43.0, unit="%", seed="001", where="Parallelism Limitations",
        conditions=f"104 GB/s of the GPU's 240 GB/s peak, T = 65,536; {_K80}",
        quote="which is 43% of the 240 GB/s maximum GPU bandwidth"),
    "001.remember.lstm_seconds": dict(
        value=92.0, unit="s", seed="001", where="Results, remember-the-first-element table",
        conditions="TensorFlow LSTM, wall time to 100% prediction accuracy; sequence length not stated",
        quote="92 seconds (49 epochs)"),
    "001.remember.lstm_epochs": dict(
        value=49.0, unit="epochs", seed="001", where="Results, remember-the-first-element table",
        conditions="TensorFlow LSTM, epochs to 100% prediction accuracy; sequence length not stated",
        quote="92 seconds (49 epochs)"),
    "001.remember.scan_seconds": dict(
        value=56.0, unit="s", seed="001", where="Results, remember-the-first-element table",
        conditions="LSTM using the parallel kernel (GILR-LSTM), wall time to 100%; sequence length not stated",
        quote="56 seconds (45 epochs)"),
    "001.remember.scan_epochs": dict(
        value=45.0, unit="epochs", seed="001", where="Results, remember-the-first-element table",
        conditions="LSTM using the parallel kernel (GILR-LSTM), epochs to 100%; sequence length not stated",
        quote="56 seconds (45 epochs)"),
}
