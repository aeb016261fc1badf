# SPDX-License-Identifier: Apache-2.0
# Libraries kiln loads on first use (src/util/lazylib.h): the code
# compiles against their headers but does not link them; it dlopen()s the
# soname the build found.  kiln_lazy_lib(PREFIX) takes what
# pkg_check_modules(PREFIX ...) found and sets
#   PREFIX_SONAME    the first library's SONAME (libcurl.so.4)
#   PREFIX_PACKAGE   the Debian package holding that file (libcurl4)
# and appends the package to KILN_LAZY_PACKAGES, which the Debian package
# adds to the Depends that dpkg-shlibdeps computes from the linked ones
# (it cannot see dlopen()ed libraries).
set(KILN_LAZY_PACKAGES "")
function(kiln_lazy_lib prefix)
  list(GET ${prefix}_LINK_LIBRARIES 0 lib)
  execute_process(COMMAND ${CMAKE_OBJDUMP} -p ${lib}
                  OUTPUT_VARIABLE dump RESULT_VARIABLE rc)
  string(REGEX MATCH "SONAME +([^ \n]+)" m "${dump}")
  if(NOT rc EQUAL 0 OR NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "no SONAME in ${lib} (objdump -p)")
  endif()
  set(soname ${CMAKE_MATCH_1})
  get_filename_component(dir ${lib} DIRECTORY)
  get_filename_component(real ${dir}/${soname} REALPATH)
  execute_process(COMMAND dpkg-query -S ${real} OUTPUT_VARIABLE owner
                  ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND owner MATCHES "^([^:,]+)")
    set(pkg ${CMAKE_MATCH_1})
  else()
    # Not from a Debian package (a local build): the message names the
    # library only.
    set(pkg ${soname})
  endif()
  set(${prefix}_SONAME ${soname} PARENT_SCOPE)
  set(${prefix}_PACKAGE ${pkg} PARENT_SCOPE)
  if(rc EQUAL 0)
    set(KILN_LAZY_PACKAGES ${KILN_LAZY_PACKAGES} ${pkg} PARENT_SCOPE)
  endif()
endfunction()
