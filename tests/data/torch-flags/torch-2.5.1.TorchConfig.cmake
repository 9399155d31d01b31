# torch 2.5.1: the lines of TorchConfig.cmake that name the C++ ABI
  set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")
