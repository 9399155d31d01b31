# torch 2.9.1: the lines of TorchConfig.cmake that name the C++ ABI

