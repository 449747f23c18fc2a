{
  "targets": [
    {
      "target_name": "shmkv",
      "sources": ["src/addon.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      # libshmkv as a user has it installed: found by pkg-config, loaded from
      # its libdir at run time without LD_LIBRARY_PATH.
      "cflags_cc": ["-std=c++17", "-O2", "<!@(pkg-config --cflags shmkv)"],
      "libraries": ["<!@(pkg-config --libs shmkv)"],
      "ldflags": ["-Wl,-rpath,<!(pkg-config --variable=libdir shmkv)"]
    }
  ]
}
