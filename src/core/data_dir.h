/*
 * data_dir.h - where lumberjit finds the Lua it ships: the sandbox/ plugins
 * (decoders/, encoders/, ...) and the lua_modules/ they require.
 *
 * An installed binary, PREFIX/bin/lumberjit, reads
 * PREFIX/share/lumberjit/{sandbox,lua_modules}: PREFIX is found from the
 * executable's own path (/proc/self/exe), so an installed tree runs from any
 * working directory and from any prefix it is copied or packaged to. A binary
 * with no such tree beside it (one in the build tree) reads the source
 * tree's folders, whose path CMake compiles in, and the modules the build
 * made (LPeg's re.lua, which an install puts among the others).
 */
#ifndef LUMBERJIT_DATA_DIR_H
#define LUMBERJIT_DATA_DIR_H

/* The sandbox/ folder; never NULL, the same string on every call. */
const char *data_dir_sandbox(void);

/* The lua_modules/ folders, ';'-separated, as require searches them;
 * never NULL, the same string on every call. */
const char *data_dir_modules(void);

#endif
