//! Safe API over one C table of HailoRT functions: the real part through the C++ shim, or the simulator.
