# A cross build for arm64 (aarch64) on an amd64 Debian machine, with Debian's
# cross compiler (gcc-aarch64-linux-gnu) and the arm64 libraries installed
# beside the host's by multiarch (libuv1-dev:arm64, ...): scripts/cross-arm64
# installs them and configures with this file.
#
# There is no sysroot: multiarch puts the arm64 libraries in
# /usr/lib/aarch64-linux-gnu and their arch-specific headers in
# /usr/include/aarch64-linux-gnu, which the cross compiler searches, and the
# shared headers in /usr/include serve both.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# pkg-config would answer with the host's .pc files: only the arm64 ones.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# What runs the arm64 test binaries here: ctest prefixes every test whose
# command is a target of this build with it.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)

# cpack -G DEB names the architecture from dpkg --print-architecture, the
# build machine's, without this.
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)

# libhttp-parser-dev is not Multi-Arch: same, so it cannot sit beside the
# host's: only the arm64 library (libhttp-parser2.9:arm64) is installed, and
# the header, the same for both, is the host's.
set(HTTP_PARSER_LIBRARY /usr/lib/aarch64-linux-gnu/libhttp_parser.so.2.9 CACHE FILEPATH
    "http-parser's arm64 library")
