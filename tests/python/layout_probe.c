/* Prints, from one CPython version's own headers, the offsets the recorder's layout table
 * (recorder/python_frames.cc) holds for it, in layout_print's format. Compiled by layout_test.sh
 * with -I pointing at that version's include directory. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#else
#include <frameobject.h>
#endif

int main(void) {
#if PY_VERSION_HEX >= 0x030d0000
  printf("tstate_frame %zu\n", offsetof(PyThreadState, current_frame));
#elif PY_VERSION_HEX >= 0x030b0000
  printf("tstate_frame %zu\n", offsetof(PyThreadState, cframe));
  printf("cframe_current %zu\n", offsetof(_PyCFrame, current_frame));
#else
  printf("tstate_frame %zu\n", offsetof(PyThreadState, frame));
#endif
#if PY_VERSION_HEX >= 0x030b0000
  printf("frame_back %zu\n", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX >= 0x030d0000
  printf("frame_code %zu\n", offsetof(_PyInterpreterFrame, f_executable));
  printf("frame_instr %zu\n", offsetof(_PyInterpreterFrame, instr_ptr));
#else
  printf("frame_code %zu\n", offsetof(_PyInterpreterFrame, f_code));
  printf("frame_instr %zu\n", offsetof(_PyInterpreterFrame, prev_instr));
#endif
  printf("frame_owner %zu\n", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX >= 0x030c0000
  printf("cstack_owner %d\n", (int)FRAME_OWNED_BY_CSTACK);
#else
  printf("cstack_owner -1\n");
#endif
#else
  printf("frame_back %zu\n", offsetof(PyFrameObject, f_back));
  printf("frame_code %zu\n", offsetof(PyFrameObject, f_code));
  printf("frame_instr %zu\n", offsetof(PyFrameObject, f_lasti));
  printf("cstack_owner -1\n");
#endif
  printf("code_filename %zu\n", offsetof(PyCodeObject, co_filename));
  printf("code_name %zu\n", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
  printf("code_qualname %zu\n", offsetof(PyCodeObject, co_qualname));
#else
  printf("code_qualname 0\n");
#endif
  printf("code_firstlineno %zu\n", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030a0000
  printf("code_linetable %zu\n", offsetof(PyCodeObject, co_linetable));
#else
  printf("code_linetable %zu\n", offsetof(PyCodeObject, co_lnotab));
#endif
#if PY_VERSION_HEX >= 0x030b0000
  printf("code_adaptive %zu\n", offsetof(PyCodeObject, co_code_adaptive));
#else
  printf("code_adaptive 0\n");
#endif
  printf("str_ascii_data %zu\n", sizeof(PyASCIIObject));
  printf("str_compact_data %zu\n", sizeof(PyCompactUnicodeObject));
  printf("tstate_next %zu\n", offsetof(PyThreadState, next));
  printf("tstate_thread_id %zu\n", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
  printf("tstate_native_id %zu\n", offsetof(PyThreadState, native_thread_id));
#else
  printf("tstate_native_id 0\n");
#endif
  return 0;
}
