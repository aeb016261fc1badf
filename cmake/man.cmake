# SPDX-License-Identifier: Apache-2.0
# Writes the manual pages into DIR at build time, from kiln itself:
# kiln(1) and kiln-COMMAND(1) for every row of src/cli/main.c's table
# (`kiln help --complete commands`, `kiln help --man [COMMAND]`), and
# libkiln(7) from docs/agent.md and docs/http.md (md2man.awk).  Pages
# are gzip'ed (-n: no name or time in them: reproducible).
#   cmake -DKILN=EXE -DSRC=DIR -DDIR=OUT -P man.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR}/man1 ${DIR}/man7)
find_program(GZIP gzip REQUIRED)
find_program(AWK NAMES gawk mawk awk REQUIRED)

function(page out)
  execute_process(${ARGN} OUTPUT_FILE ${out} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "making ${out} failed (${rc})")
  endif()
  execute_process(COMMAND ${GZIP} -9nf ${out} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${out} failed (${rc})")
  endif()
endfunction()

execute_process(COMMAND ${KILN} help --complete commands
                OUTPUT_VARIABLE cmds RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln help --complete commands failed (${rc})")
endif()
string(REPLACE "\n" ";" cmds "${cmds}")
page(${DIR}/man1/kiln.1 COMMAND ${KILN} help --man)
foreach(c ${cmds})
  if(c AND NOT c STREQUAL "help")
    page(${DIR}/man1/kiln-${c}.1 COMMAND ${KILN} help --man ${c})
  endif()
endforeach()
page(${DIR}/man7/libkiln.7 COMMAND ${AWK} -v version=${VERSION}
     -f ${SRC}/cmake/md2man.awk ${SRC}/docs/agent.md ${SRC}/docs/http.md)
