# Injected into every CMake package of a bare-machine build through
# CMAKE_PROJECT_TOP_LEVEL_INCLUDES (set by scripts/build.sh; CMake >= 3.24).
# Never used on a full ROS install.
#
# Why: the ROS 2 PyPI wheels were built in a manylinux container, and their exported
# `*__rosidl_generator_pyExport.cmake` files hard-code the container's interpreter:
#   INTERFACE_INCLUDE_DIRECTORIES "/opt/python/cp311-cp311/include/python3.11;
#                                  /opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include"
# CMake refuses to generate a target that links an imported target whose include
# directory does not exist, so any interface package depending on std_msgs & co fails.
#
# Fix, without editing files inside the venv: once the top-level CMakeLists.txt has been
# read (deferred call), rewrite those include directories on every imported target to the
# running interpreter's include dir and numpy's include dir.

if(NOT DEFINED ROBOTSIM_PYTHON_EXECUTABLE)
  message(FATAL_ERROR "ros_wheels_fixup.cmake: ROBOTSIM_PYTHON_EXECUTABLE is not set (scripts/build.sh sets it)")
endif()

execute_process(
  COMMAND "${ROBOTSIM_PYTHON_EXECUTABLE}" -c
    "import sysconfig, numpy; print(sysconfig.get_paths()['include'] + ';' + numpy.get_include(), end='')"
  OUTPUT_VARIABLE _robotsim_real_py_includes
  RESULT_VARIABLE _robotsim_rc)
if(NOT _robotsim_rc EQUAL 0)
  message(FATAL_ERROR "ros_wheels_fixup.cmake: could not ask ${ROBOTSIM_PYTHON_EXECUTABLE} for its include dirs")
endif()
list(GET _robotsim_real_py_includes 0 _robotsim_py_include)
list(GET _robotsim_real_py_includes 1 _robotsim_numpy_include)

function(_robotsim_fix_wheel_include_dirs)
  get_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs OR NOT _dirs MATCHES "/opt/python/cp")
      continue()
    endif()
    set(_fixed "")
    foreach(_dir IN LISTS _dirs)
      if(_dir MATCHES "^/opt/python/cp[0-9]+-cp[0-9]+/include/")
        set(_dir "${_robotsim_py_include}")
      elseif(_dir MATCHES "^/opt/python/cp[0-9]+-cp[0-9]+/.*/numpy/")
        set(_dir "${_robotsim_numpy_include}")
      endif()
      list(APPEND _fixed "${_dir}")
    endforeach()
    set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_fixed}")
  endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _robotsim_fix_wheel_include_dirs)
