# The package test: installs the build tree into a temporary prefix, then configures, builds and runs an outside
# project (tests/package/consumer) against it, as a user would. No GPU.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DFIXTURE=... -DGENERATOR=... -P run.cmake
#   CMAKE_COMMAND is whichever CMake runs this script: the package is checked with that version. Without FIXTURE (the
#   database writer, built with the tests) the consumer is built but not run (scripts/cmake4_check.sh).
cmake_minimum_required(VERSION 3.25)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f bin/ktune bin/ktune-worker include/ktune/ktune.hpp include/ktune/core/error.hpp
          share/ktune/search_spaces/rmsnorm.yaml share/ktune/kernels/common/harness_kernels.cuh)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install holds no ${f}")
  endif()
endforeach()

# The installed CLI finds the share/ktune beside it, from a folder outside any checkout, without KTUNE_ROOT.
unset(ENV{KTUNE_ROOT})
execute_process(COMMAND ${prefix}/bin/ktune space rmsnorm WORKING_DIRECTORY / RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}" "${prefix}/share/ktune/search_spaces/rmsnorm.yaml" at)
if(NOT rc EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "the installed ktune did not find its own search spaces (${rc}):\n${out}\n${err}")
endif()

run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
if(NOT FIXTURE)
  return()
endif()
run(${FIXTURE} ${WORK_DIR}/results.db)
# The consumer finds kernels/ and search_spaces/ beside the installed library, not through the environment.
unset(ENV{KTUNE_ROOT})
unset(ENV{KTUNE_WORKER})
run(${WORK_DIR}/consumer/consumer ${SOURCE_DIR}/tests/data/t1/vector_add.t1.json ${WORK_DIR}/results.db
    ${WORK_DIR}/generated)
message(STATUS "${out}")
foreach(expected "root ${prefix}/share/ktune" "space rmsnorm/fwd: " "T1 space vector_add: 17 configurations"
                 "best " "exported ktune_tuned::rmsnorm_fwd" "bad input caught: yes")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the consumer's output lacks '${expected}'")
  endif()
endforeach()
