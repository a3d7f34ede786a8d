# cmake -DBIN=lumberjit -DOUT=lumberjit.1 -DDATA_DIR=share/lumberjit [-DEMULATOR=qemu-aarch64] -P manpage.cmake
#
# Writes lumberjit's manual page from its own --help, --help TYPE and
# --version, so the page says what the binary does and cannot drift from it. The help text goes
# in verbatim (.nf): it is already laid out for a terminal. A cross build's
# binary runs under EMULATOR (its CMAKE_CROSSCOMPILING_EMULATOR).
execute_process(COMMAND ${EMULATOR} "${BIN}" --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --help failed")
endif()
execute_process(COMMAND ${EMULATOR} "${BIN}" --version OUTPUT_VARIABLE version RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --version failed")
endif()
# Each plugin type's keys (--help TYPE), the types as --help lists them.
string(REGEX REPLACE ".*settings'\\):\n" "" type_list "${help}")
string(REGEX MATCHALL "[a-z_]+" types "${type_list}")
set(keys "")
foreach(type ${types} lumberjit)
  execute_process(COMMAND ${EMULATOR} "${BIN}" --help ${type} OUTPUT_VARIABLE one
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${BIN} --help ${type} failed")
  endif()
  string(APPEND keys "${one}\n")
endforeach()

string(REGEX MATCH "^lumberjit [^ \n]+" title "${version}")
string(REPLACE "lumberjit " "" number "${title}")

# roff: a backslash is written \e; a line may not start with . or '.
foreach(text help version keys)
  string(REPLACE "\\" "\\e" ${text} "${${text}}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" ${text} "${${text}}")
endforeach()

file(WRITE "${OUT}" ".TH LUMBERJIT 1 \"\" \"lumberjit ${number}\" \"User Commands\"
.SH NAME
lumberjit \\- a log collector with sandboxed LuaJIT decoders and encoders
.SH SYNOPSIS
.nf
${help}.fi
.SH PLUGIN TYPES
The keys each type's table takes: what each holds, its default, what it does.
.nf
${keys}.fi
.SH FILES
PREFIX is the folder above the one that holds the lumberjit binary.
.TP
.I PREFIX/${DATA_DIR}/sandbox
the bundled plugins: a plugin's \\fBfilename\\fR is looked up beside the
configuration file, then here
.TP
.I PREFIX/${DATA_DIR}/lua_modules
the Lua modules plugins may require
.SH VERSION
.nf
${version}.fi
.SH SEE ALSO
README.md and the examples, in the package's documentation folder.
")
