/*
 * elfsym.c - writes symbol-only ELF64 files for the synthetic workload and
 * makes up realistic, stable function names for them (see elfsym.h).
 *
 * The writer uses the <elf.h> structures directly; the file layout is
 *
 *   0x00   Elf64_Ehdr
 *   0x40   3 x Elf64_Phdr (PT_LOAD R, PT_LOAD R+X, PT_NOTE)
 *   0xe8   .note.gnu.build-id (Elf64_Nhdr, "GNU\0", the ID, 4-aligned)
 *   ...    .symtab (8-aligned), .strtab, .shstrtab, section headers (8-aligned)
 *
 * with .text a SHT_NOBITS section at text_vaddr (see the header for why the
 * R+X segment's file range is not backed by code).
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "elfsym.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "elfsym writes ELFDATA2LSB from host structures: little-endian hosts only"
#endif

#define PAGE 0x1000u
#define N_PHDRS 3
#define N_SHDRS 6

enum { SH_NULL, SH_NOTE, SH_TEXT, SH_SYMTAB, SH_STRTAB, SH_SHSTRTAB };

/* Section names, NUL-separated, and their offsets in .shstrtab. */
static const char shstrtab[] = "\0.note.gnu.build-id\0.text\0.symtab\0.strtab\0.shstrtab";
static const uint32_t sh_name_off[N_SHDRS] = { 0, 1, 20, 26, 34, 42 };

/* ---- the writer ------------------------------------------------------------ */

int elfsym_init(struct elfsym *w, const uint8_t *id, size_t id_len, uint64_t text_vaddr,
		uint64_t text_size)
{
	Elf64_Sym null_sym;
	int rc;

	memset(w, 0, sizeof(*w));
	buf_init(&w->symtab, ELFSYM_MAX_BYTES);
	buf_init(&w->strtab, ELFSYM_MAX_BYTES);
	if (!id || id_len == 0 || id_len > sizeof(w->build_id) || text_vaddr < PAGE ||
	    text_vaddr % PAGE || text_size == 0 || text_vaddr + text_size < text_vaddr)
		return ERR_INVALID;
	memcpy(w->build_id, id, id_len);
	w->build_id_len = id_len;
	w->text_vaddr = text_vaddr;
	w->text_size = text_size;
	memset(&null_sym, 0, sizeof(null_sym));
	if ((rc = buf_append(&w->symtab, &null_sym, sizeof(null_sym))) ||
	    (rc = buf_putc(&w->strtab, '\0')))
		return rc;
	return 0;
}

void elfsym_release(struct elfsym *w)
{
	buf_release(&w->symtab);
	buf_release(&w->strtab);
}

int elfsym_add(struct elfsym *w, const char *name, uint64_t vaddr, uint64_t size)
{
	size_t name_len = strlen(name), sym_len = w->symtab.len, str_len = w->strtab.len;
	Elf64_Sym s;
	int rc;

	if (name_len == 0 || vaddr < w->text_vaddr || size == 0 ||
	    vaddr - w->text_vaddr > w->text_size || size > w->text_size - (vaddr - w->text_vaddr))
		return ERR_INVALID;
	if (w->n_syms >= ELFSYM_MAX_SYMBOLS || str_len > UINT32_MAX - name_len - 1)
		return ERR_TOO_LARGE;
	memset(&s, 0, sizeof(s));
	s.st_name = (Elf64_Word)str_len;
	s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	s.st_other = STV_DEFAULT;
	s.st_shndx = SH_TEXT;
	s.st_value = vaddr;
	s.st_size = size;
	if ((rc = buf_append(&w->strtab, name, name_len + 1)) ||
	    (rc = buf_append(&w->symtab, &s, sizeof(s)))) {
		w->symtab.len = sym_len;
		w->strtab.len = str_len;
		return rc;
	}
	w->n_syms++;
	return 0;
}

static int pad_to(struct buf *out, size_t base, size_t align)
{
	static const char zeros[8];
	size_t rel = out->len - base, pad = (align - rel % align) % align;

	return pad ? buf_append(out, zeros, pad) : 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void fill_headers(const struct elfsym *w, Elf64_Ehdr *eh, Elf64_Phdr ph[N_PHDRS],
			 Elf64_Shdr sh[N_SHDRS], uint64_t *note_size)
{
	uint64_t note_off = sizeof(*eh) + N_PHDRS * sizeof(Elf64_Phdr);
	uint64_t nsz = sizeof(Elf64_Nhdr) + 4 + align_up(w->build_id_len, 4);
	uint64_t sym_off = align_up(note_off + nsz, 8);
	uint64_t str_off = sym_off + w->symtab.len;
	uint64_t shstr_off = str_off + w->strtab.len;
	uint64_t sh_off = align_up(shstr_off + sizeof(shstrtab), 8);

	memset(eh, 0, sizeof(*eh));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_ident[EI_OSABI] = ELFOSABI_SYSV;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = sh_off;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = N_PHDRS;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = N_SHDRS;
	eh->e_shstrndx = SH_SHSTRTAB;

	memset(ph, 0, N_PHDRS * sizeof(*ph));
	/* The headers and the note, mapped read-only at 0 as a linker would. */
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R, .p_offset = 0, .p_vaddr = 0,
			      .p_paddr = 0, .p_filesz = note_off + nsz, .p_memsz = note_off + nsz,
			      .p_align = PAGE };
	/* p_offset == p_vaddr: a profile's file offset is the symbol's vaddr. */
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = w->text_vaddr,
			      .p_vaddr = w->text_vaddr, .p_paddr = w->text_vaddr,
			      .p_filesz = w->text_size, .p_memsz = w->text_size, .p_align = PAGE };
	ph[2] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = note_off,
			      .p_vaddr = note_off, .p_paddr = note_off, .p_filesz = nsz,
			      .p_memsz = nsz, .p_align = 4 };

	memset(sh, 0, N_SHDRS * sizeof(*sh));
	sh[SH_NOTE] = (Elf64_Shdr){ .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC, .sh_addr = note_off,
				    .sh_offset = note_off, .sh_size = nsz, .sh_addralign = 4 };
	sh[SH_TEXT] = (Elf64_Shdr){ .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				    .sh_addr = w->text_vaddr, .sh_offset = w->text_vaddr,
				    .sh_size = w->text_size, .sh_addralign = 16 };
	/* sh_info: index of the first non-local symbol; all but the null one are global. */
	sh[SH_SYMTAB] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
				      .sh_size = w->symtab.len, .sh_link = SH_STRTAB, .sh_info = 1,
				      .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) };
	sh[SH_STRTAB] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = str_off,
				      .sh_size = w->strtab.len, .sh_addralign = 1 };
	sh[SH_SHSTRTAB] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
					.sh_size = sizeof(shstrtab), .sh_addralign = 1 };
	for (int i = 0; i < N_SHDRS; i++)
		sh[i].sh_name = sh_name_off[i];
	*note_size = nsz;
}

int elfsym_write_buf(const struct elfsym *w, struct buf *out)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[N_PHDRS];
	Elf64_Shdr sh[N_SHDRS];
	Elf64_Nhdr nh;
	uint64_t note_size;
	size_t base = out->len, old = out->len;
	int rc;

	fill_headers(w, &eh, ph, sh, &note_size);
	nh.n_namesz = 4; /* "GNU" and its NUL */
	nh.n_descsz = (Elf64_Word)w->build_id_len;
	nh.n_type = NT_GNU_BUILD_ID;
	if ((rc = buf_reserve(out, eh.e_shoff + sizeof(sh))) ||
	    (rc = buf_append(out, &eh, sizeof(eh))) || (rc = buf_append(out, ph, sizeof(ph))) ||
	    (rc = buf_append(out, &nh, sizeof(nh))) || (rc = buf_append(out, "GNU", 4)) ||
	    (rc = buf_append(out, w->build_id, w->build_id_len)) || (rc = pad_to(out, base, 4)) ||
	    (rc = pad_to(out, base, 8)) ||
	    (rc = buf_append(out, w->symtab.data, w->symtab.len)) ||
	    (rc = buf_append(out, w->strtab.data, w->strtab.len)) ||
	    (rc = buf_append(out, shstrtab, sizeof(shstrtab))) || (rc = pad_to(out, base, 8)) ||
	    (rc = buf_append(out, sh, sizeof(sh)))) {
		out->len = old;
		return rc;
	}
	return 0;
}

int elfsym_write_file(const struct elfsym *w, const char *path, struct err_msg *msg)
{
	struct buf b;
	FILE *f = NULL;
	int rc;

	buf_init(&b, 2 * (size_t)ELFSYM_MAX_BYTES + 4096); /* both tables, headers, the note */
	if ((rc = elfsym_write_buf(w, &b))) {
		err_set(msg, rc, "%s: building the ELF image: %s", path, err_str(rc));
		goto out;
	}
	f = fopen(path, "wb");
	if (!f) {
		rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (fwrite(b.data, 1, b.len, f) != b.len) {
		rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
		goto out;
	}
out:
	if (f && fclose(f) != 0 && rc == 0)
		rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	buf_release(&b);
	return rc;
}

/* ---- names ------------------------------------------------------------------
 *
 * Every flavour has a list of real names (taken first, in order), then a
 * combinatorial space (vocabularies multiplied together).  Ordinal k past
 * the list picks element (k' * stride) mod N of that space, a bijection when
 * gcd(stride, N) = 1, so neighbouring functions do not get look-alike
 * names; past N, a round number is appended to the last component.  C++
 * names are nested names _ZN[K]<scope...><method>E<params> (Itanium C++ ABI
 * 5.1.5); their first scope component is substitution candidate S_ (5.1.10),
 * which the parameter forms use for types of the service's own namespace.
 * Vocabularies are chosen so that no two spaces can spell the same name.
 */

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *const libc_real[] = {
	"memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp", "strchr",
	"strrchr", "strstr", "strdup", "malloc", "free", "calloc", "realloc", "posix_memalign",
	"_int_malloc", "_int_free", "_int_realloc", "malloc_consolidate", "sysmalloc",
	"tcache_init", "unlink_chunk", "pthread_mutex_lock", "pthread_mutex_unlock",
	"pthread_mutex_trylock", "pthread_cond_wait", "pthread_cond_signal",
	"pthread_cond_broadcast", "pthread_cond_timedwait", "pthread_rwlock_rdlock",
	"pthread_rwlock_unlock", "pthread_once", "pthread_getspecific", "pthread_create",
	"start_thread", "__lll_lock_wait", "__lll_lock_wake", "__futex_abstimed_wait_common",
	"__GI___futex_abstimed_wait_cancelable64", "read", "write", "readv", "writev",
	"epoll_wait", "epoll_ctl", "poll", "sendmsg", "recvmsg", "sendto", "recvfrom",
	"__libc_send", "__libc_recv", "accept4", "connect", "close", "openat64", "fstat64",
	"lseek64", "pread64", "pwrite64", "fsync", "fdatasync", "mmap64", "munmap", "mprotect",
	"madvise", "brk", "sbrk", "qsort", "qsort_r", "msort_with_tmp", "bsearch", "snprintf",
	"vsnprintf", "__vfprintf_internal", "__printf_fp_l", "__printf_buffer",
	"_itoa_word", "strtol", "strtoul", "strtoull", "____strtoll_l_internal",
	"____strtod_l_internal", "round_and_return", "__mpn_mul", "__mpn_mul_1", "getenv",
	"clock_gettime", "__clock_gettime64", "gettimeofday", "time", "localtime_r",
	"__tz_convert", "__tzfile_compute", "nanosleep", "__nanosleep64", "sched_yield",
	"syscall", "getpid", "gettid", "sigprocmask", "__sigsetjmp", "__longjmp_chk",
	"raise", "abort", "__libc_start_call_main", "__libc_start_main_impl", "exit",
	"__run_exit_handlers", "__cxa_finalize", "dl_iterate_phdr", "__tls_get_addr",
	"fwrite", "fputs", "fflush", "_IO_file_xsputn", "_IO_new_file_write", "_IO_do_write",
	"_IO_new_file_overflow", "_IO_fwrite", "getaddrinfo", "gaih_inet", "__res_context_send",
	"__inet_pton_length", "inet_ntop", "if_nametoindex", "getsockopt", "setsockopt",
	"__memcpy_chk", "__memset_chk", "__strcpy_chk", "__stack_chk_fail", "toupper",
	"tolower", "isspace", "__ctype_b_loc", "wcslen", "mbrtowc", "iconv", "__gconv",
	"__gconv_transform_utf8_internal", "setlocale", "newlocale", "uselocale",
};

static const char *const libc_ifunc_base[] = {
	"memmove", "memset", "memcmp", "memcmpeq", "strlen", "strnlen", "strchr",
	"strchrnul", "strrchr", "memchr", "memrchr", "rawmemchr", "strcmp", "strncmp",
	"strcpy", "stpcpy", "strcat", "strcasecmp_l", "strspn", "wmemset", "wcslen", "wcsnlen",
};

static const char *const libc_ifunc_sfx[] = {
	"_sse2", "_sse2_unaligned", "_sse2_unaligned_erms", "_ssse3", "_sse4_1", "_sse4_2",
	"_avx2", "_avx2_rtm", "_avx_unaligned_erms", "_avx2_unaligned_erms",
	"_avx_unaligned_erms_rtm", "_evex", "_evex_unaligned_erms", "_avx512_unaligned_erms",
};

static const char *const libc_prefix[] = {
	"__libc_", "_IO_", "__GI_", "__nss_", "__pthread_", "__nptl_", "_dl_", "__x86_", "_nl_",
};

static const char *const libc_noun[] = {
	"arena", "file", "wfile", "buf", "str", "lock", "cond", "futex", "tz", "locale",
	"iconv", "hash", "files", "resolv", "sched", "sigaction", "printf", "scanf",
	"strto", "fd", "dirent", "stdio", "tcache", "mutex", "tls", "cache",
};

static const char *const libc_verb[] = {
	"alloc", "free", "init", "lookup", "read", "write", "flush", "seek", "sync", "unlock",
	"lock", "wait", "wake", "convert", "parse", "overflow", "underflow", "doallocate",
	"setbuf", "fini", "grow", "trim", "reset", "check",
};

static const char *const ssl_real[] = {
	"SSL_read", "SSL_write", "SSL_read_ex", "SSL_write_ex", "SSL_do_handshake",
	"SSL_connect", "SSL_accept", "SSL_shutdown", "SSL_new", "SSL_free", "SSL_CTX_new",
	"SSL_get_error", "SSL_pending", "ssl3_read_bytes", "ssl3_write_bytes", "ssl3_read_n",
	"ssl3_write_pending", "tls1_enc", "tls13_enc", "tls1_mac_old", "ssl3_get_record",
	"do_ssl3_write", "ossl_statem_connect", "ossl_statem_accept", "state_machine",
	"read_state_machine", "write_state_machine", "tls_construct_client_hello",
	"tls_process_server_hello", "tls_process_server_certificate", "tls_construct_finished",
	"tls_process_key_exchange", "EVP_DigestInit_ex", "EVP_DigestUpdate",
	"EVP_DigestFinal_ex", "EVP_EncryptInit_ex", "EVP_EncryptUpdate", "EVP_EncryptFinal_ex",
	"EVP_DecryptUpdate", "EVP_DecryptFinal_ex", "EVP_CipherInit_ex", "EVP_CIPHER_CTX_new",
	"EVP_CIPHER_CTX_free", "EVP_MD_CTX_new", "EVP_MD_CTX_free", "EVP_PKEY_derive",
	"EVP_PKEY_sign", "EVP_PKEY_verify", "EVP_MAC_update", "HMAC_Update", "HMAC_Final",
	"SHA256_Update", "sha256_block_data_order_avx2", "sha256_block_data_order_shaext",
	"sha512_block_data_order_avx2", "aesni_gcm_encrypt", "aesni_gcm_decrypt",
	"aesni_ctr32_encrypt_blocks", "aesni_cbc_encrypt", "gcm_ghash_avx", "gcm_gmult_avx",
	"ChaCha20_ctr32", "Poly1305_Update", "CRYPTO_gcm128_encrypt_ctr32",
	"CRYPTO_gcm128_decrypt_ctr32", "BN_mod_exp_mont", "BN_mod_exp_mont_consttime",
	"bn_mul_mont", "bn_sqr8x_internal", "BN_mod_mul_montgomery", "ecp_nistz256_point_mul",
	"ecp_nistz256_mul_mont", "ecp_nistz256_sqr_mont", "ecp_nistz256_ord_mul_mont",
	"x25519_fe51_mul", "ossl_x25519", "X509_verify_cert", "X509_STORE_CTX_new",
	"ASN1_item_d2i", "ASN1_item_ex_d2i", "asn1_item_embed_d2i", "d2i_X509",
	"PEM_read_bio_X509", "BIO_read", "BIO_write", "BIO_ctrl", "ERR_clear_error",
	"ERR_peek_error", "OPENSSL_cleanse", "CRYPTO_malloc", "CRYPTO_free", "CRYPTO_zalloc",
	"RAND_bytes", "ossl_rand_drbg_generate", "OSSL_LIB_CTX_new", "ossl_lib_ctx_get_data",
};

static const char *const ssl_prefix[] = {
	"ssl3_", "tls1_", "tls13_", "ossl_", "EVP_", "BN_", "EC_", "X509_", "ASN1_", "BIO_",
	"CRYPTO_", "OSSL_",
};

static const char *const ssl_noun[] = {
	"record", "cipher", "digest", "key_share", "cert", "session", "ticket", "alert",
	"buffer", "handshake", "point", "group", "mont", "drbg", "provider", "decoder",
	"encoder", "store", "param", "mac", "kdf", "sigalg",
};

static const char *const ssl_verb[] = {
	"new", "free", "init", "update", "final", "get", "set", "ctrl", "dup", "copy", "read",
	"write", "check", "verify", "sign", "derive", "generate", "process", "construct", "parse",
};

static const char *const cxx_real[] = {
	"_Znwm", "_ZdlPv", "_ZdlPvm", "_Znam", "_ZdaPv", "__cxa_allocate_exception",
	"__cxa_throw", "__cxa_begin_catch", "__cxa_end_catch", "__cxa_guard_acquire",
	"__cxa_guard_release", "__dynamic_cast", "__gxx_personality_v0",
	"_ZNSt6thread4joinEv", "_ZNSt6thread6detachEv",
	"_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE",
	"_ZNSt18condition_variable10notify_allEv", "_ZNSt18condition_variable10notify_oneEv",
	"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_mutateEmmPKcm",
	"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_appendEPKcm",
	"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm",
	"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE10_M_replaceEmmPKcm",
	"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE7reserveEm",
	"_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_assignERKS4_",
	"_ZNSo9_M_insertImEERSoT_", "_ZNSo5flushEv", "_ZNSo3putEc", "_ZNSo5writeEPKcl",
	"_ZSt16__ostream_insertIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_PKS3_l",
	"_ZNSt8__detail15_List_node_base7_M_hookEPS0_",
	"_ZNSt8__detail15_List_node_base9_M_unhookEv",
	"_ZSt18_Rb_tree_incrementPSt18_Rb_tree_node_base",
	"_ZSt18_Rb_tree_decrementPSt18_Rb_tree_node_base",
	"_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_",
	"_ZSt28_Rb_tree_rebalance_for_erasePSt18_Rb_tree_node_baseRS_",
	"_ZNKSt8__detail20_Prime_rehash_policy14_M_need_rehashEmmm",
	"_ZNKSt8__detail20_Prime_rehash_policy11_M_next_bktEm",
	"_ZSt17__throw_bad_allocv", "_ZSt20__throw_length_errorPKc",
	"_ZSt19__throw_logic_errorPKc", "_ZNSt6locale7classicEv", "_ZNSt6localeC1Ev",
	"_ZNSt6localeD1Ev", "_ZNSt8ios_baseC2Ev", "_ZNSt8ios_base4InitC1Ev",
	"_ZNSt9basic_iosIcSt11char_traitsIcEE5clearESt12_Ios_Iostate",
	"_ZNSt13random_device9_M_getvalEv", "_ZNSt12__basic_fileIcE6xsputnEPKcl",
	"_ZNSt15basic_streambufIcSt11char_traitsIcEE6xsputnEPKcl",
	"_ZNKSt5ctypeIcE13_M_widen_initEv",
	"_ZNSt16_Sp_counted_baseILN9__gnu_cxx12_Lock_policyE2EE10_M_releaseEv",
};

/* Scopes (mangled <prefix> fragments) none of which cxx_real uses. */
static const char *const cxx_class[] = {
	"St13basic_filebufIcSt11char_traitsIcEE", "St14basic_ifstreamIcSt11char_traitsIcEE",
	"St7__cxx1118basic_stringstreamIcSt11char_traitsIcESaIcEE",
	"St7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEE", "St7__cxx118numpunctIcE",
	"St11__timepunctIcE", "9__gnu_cxx17__pool_alloc_base",
	"9__gnu_cxx18stdio_sync_filebufIcSt11char_traitsIcEE", "St12shared_mutex",
	"St13__future_base13_State_baseV2", "St6chrono3_V212system_clock",
	"St3pmr26synchronized_pool_resource", "St8__detail8_ScannerIcE", "St8__detail9_NFA_base",
	"St10filesystem7__cxx114path", "St10error_code", "St14_Function_base",
};

static const char *const cxx_method[] = {
	"_M_insert", "_M_erase", "_M_create", "_M_dispose", "_M_destroy", "_M_release", "_M_run",
	"_M_mutate", "_M_append", "_M_replace", "_M_assign", "_M_construct", "_M_reserve",
	"_M_realloc_insert", "_M_fill_insert", "_M_default_append", "_M_extract", "_M_get",
	"_M_put", "_M_init", "_M_clear", "_M_copy", "_M_transfer", "_M_reverse", "_M_sync",
	"_M_seek", "_M_check", "_M_set_length", "_M_terminate_output",
	"_M_allocate_internal_buffer", "sync", "overflow", "underflow", "uflow", "xsputn",
	"xsgetn", "seekoff", "seekpos", "imbue", "showmanyc", "pbackfail", "setbuf",
};

/* Parameter lists of std:: functions: builtins and C strings only. */
static const char *const cxx_params[] = { "v", "m", "PKcl", "Pv", "mm", "b", "i", "PKcm" };

static const char *const main_module[] = {
	"http", "grpc", "db", "cache", "auth", "config", "metrics", "queue", "codec", "storage",
};

static const char *const main_class[] = {
	"Server", "Router", "Handler", "Connection", "Session", "RequestParser",
	"ResponseWriter", "ConnectionPool", "Client", "Encoder", "Decoder", "Scheduler",
	"Worker", "Dispatcher", "Registry", "Buffer", "Stream", "Timer", "Listener",
	"Middleware", "Context", "Tracer", "Logger", "RateLimiter", "CircuitBreaker",
	"RetryPolicy", "Resolver", "Balancer", "HealthChecker", "Batcher",
};

/* "C2"/"D2" are the base-object constructor and destructor (ABI 5.1.4.3). */
static const char *const main_method[] = {
	"C2", "D2", "handle", "dispatch", "process", "run", "start", "stop", "flush", "read",
	"write", "parse", "encode", "decode", "serialize", "deserialize", "validate", "lookup",
	"insert", "erase", "update", "refresh", "resolve", "connect", "accept", "close", "poll",
	"wait", "notify", "schedule", "submit", "acquire", "release", "reset", "onComplete",
	"onError", "handleTimeout", "nextBatch", "tryAcquire", "compact",
};

static const char *const svc_class[] = {
	"PriceService", "CartRepository", "OrderValidator", "InventoryClient", "TaxCalculator",
	"DiscountEngine", "PaymentGateway", "FraudDetector", "SessionStore", "UserProfile",
	"CatalogIndex", "SearchRanker", "QueryPlanner", "FeatureStore", "ModelScorer",
	"ShipmentTracker", "AddressNormalizer", "CurrencyConverter", "LedgerWriter",
	"InvoiceRenderer", "NotificationQueue", "TemplateEngine", "TokenIssuer",
	"PermissionChecker", "AuditLog", "EventBus", "RecommendationCache", "ProductGraph",
	"ReviewAggregator", "CouponBook", "StockReservation", "WarehouseRouter", "RateTable",
	"BillingCycle", "SubscriptionPlan", "RefundProcessor", "ReceiptPrinter", "SkuResolver",
	"PromotionRules", "LoyaltyAccount",
};

static const char *const svc_method[] = {
	"C2", "D2", "calculate", "validate", "apply", "lookup", "reserve", "releaseHold",
	"refresh", "score", "rank", "render", "normalize", "convert", "persist", "load",
	"enqueue", "dequeue", "authorize", "capture", "settle", "reconcile", "reindex", "search",
	"filter", "aggregate", "summarize", "checkPolicy", "buildKey", "encodeRow", "decodeRow",
	"mergeDelta", "fetchBatch", "computeTotals", "applyDiscounts", "resolveRoute",
	"snapshot", "evict",
};

/* Value types of the service namespace; no class or module above is named so. */
static const char *const svc_type[] = {
	"Request", "Response", "Cart", "Order", "User", "Item", "Sku", "Money", "Span", "Row",
	"Key", "Query", "Options", "Status", "Slice", "Payload", "Header", "Deadline",
};

static const char *const builtin[] = { "i", "j", "l", "m", "b", "d", "f" };

struct sb {
	char *p;
	size_t n, cap;
	int over;
};

static void sb_fmt(struct sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_fmt(struct sb *s, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (s->over)
		return;
	va_start(ap, fmt);
	k = vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= s->cap - s->n) {
		s->over = 1;
		return;
	}
	s->n += (size_t)k;
}

/* An Itanium <source-name>: the identifier's length in decimal, then it. */
static void sb_ident(struct sb *s, const char *id, uint64_t round)
{
	char tmp[ELFSYM_NAME_MAX];
	int k = round ? snprintf(tmp, sizeof(tmp), "%s%" PRIu64, id, round + 1)
		      : snprintf(tmp, sizeof(tmp), "%s", id);

	sb_fmt(s, "%d%s", k, tmp);
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Element of a space of n names for ordinal k, and the round past n. */
static uint64_t pick(uint64_t k, uint64_t n, uint64_t *round)
{
	uint64_t stride = (0x9e3779b97f4a7c15ULL % n) | 1;

	while (gcd(stride, n) != 1)
		stride += 2;
	*round = k / n;
	return (k % n) * (stride % n) % n;
}

static void name_c(struct sb *s, const char *const *real, size_t n_real,
		   const char *const *base, size_t n_base, const char *const *sfx, size_t n_sfx,
		   const char *const *pre, size_t n_pre, const char *const *noun, size_t n_noun,
		   const char *const *verb, size_t n_verb, uint64_t k)
{
	uint64_t n_var = (uint64_t)n_base * n_sfx, idx, round;

	if (k < n_real) {
		sb_fmt(s, "%s", real[k]);
		return;
	}
	idx = pick(k - n_real, n_var + (uint64_t)n_pre * n_noun * n_verb, &round);
	if (idx < n_var) {
		sb_fmt(s, "__%s%s", base[idx / n_sfx], sfx[idx % n_sfx]);
	} else {
		idx -= n_var;
		sb_fmt(s, "%s%s_%s", pre[idx / n_verb / n_noun], noun[idx / n_verb % n_noun],
		       verb[idx % n_verb]);
	}
	if (round)
		sb_fmt(s, "_%" PRIu64, round + 1);
}

/*
 * _ZN[K]<parts...><method>E<params> for the service's own C++ code; parts[0]
 * is the service namespace, substitution S_.  Constructors and destructors
 * take no cv-qualifier; past the first round they become plain methods.
 */
static void name_cxx_service(struct sb *s, const char *const *parts, size_t n_parts,
			     const char *method, uint64_t round, uint64_t h)
{
	int ctor = !strcmp(method, "C2"), dtor = !strcmp(method, "D2");
	const char *type = svc_type[(h >> 16) % NELEM(svc_type)];
	const char *b1 = builtin[(h >> 24) % NELEM(builtin)], *b2 = builtin[(h >> 32) % NELEM(builtin)];

	if (round && (ctor || dtor)) {
		method = ctor ? "construct" : "destroy";
		ctor = dtor = 0;
	}
	sb_fmt(s, "_ZN%s", !ctor && !dtor && (h & 7) < 3 ? "K" : "");
	for (size_t i = 0; i < n_parts; i++)
		sb_ident(s, parts[i], 0);
	if (ctor || dtor)
		sb_fmt(s, "%s", method);
	else
		sb_ident(s, method, round);
	sb_fmt(s, "E");
	if (dtor) {
		sb_fmt(s, "v");
		return;
	}
	switch ((h >> 8) % 8) {
	case 0: sb_fmt(s, "v"); break;
	case 1: sb_fmt(s, "RKNS_%zu%sE", strlen(type), type); break;
	case 2: sb_fmt(s, "RKNS_%zu%sE%s", strlen(type), type, b1); break;
	case 3: sb_fmt(s, "%s", b1); break;
	case 4: sb_fmt(s, "PNS_%zu%sE", strlen(type), type); break;
	case 5: sb_fmt(s, "RKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"); break;
	case 6: sb_fmt(s, "St17basic_string_viewIcSt11char_traitsIcEE"); break;
	default: sb_fmt(s, "%s%s", b1, b2); break;
	}
}

static void name_stdcxx(struct sb *s, uint64_t k)
{
	uint64_t idx, round, h;

	if (k < NELEM(cxx_real)) {
		sb_fmt(s, "%s", cxx_real[k]);
		return;
	}
	idx = pick(k - NELEM(cxx_real), NELEM(cxx_class) * NELEM(cxx_method), &round);
	h = hash_u64(idx * 1000003 + round);
	sb_fmt(s, "_ZN%s%s", (h & 7) < 2 ? "K" : "", cxx_class[idx / NELEM(cxx_method)]);
	sb_ident(s, cxx_method[idx % NELEM(cxx_method)], round);
	sb_fmt(s, "E%s", cxx_params[(h >> 8) % NELEM(cxx_params)]);
}

/* The service name as a C++ identifier: [A-Za-z0-9_], not starting with a digit. */
static void scope_ident(const char *scope, char out[49])
{
	size_t i, j = 0;

	if (!scope || !*scope)
		scope = "service";
	if (*scope >= '0' && *scope <= '9')
		out[j++] = 's';
	for (i = 0; scope[i] && j < 48; i++) {
		char c = scope[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		out[j++] = ok ? c : '_';
	}
	out[j] = '\0';
}

int elfsym_name(enum elfsym_flavor flavor, const char *scope, uint64_t ordinal, char *out,
		size_t size)
{
	struct sb s = { out, 0, size, 0 };
	char ns[49];
	uint64_t idx, round, h;

	if (!out || size < ELFSYM_NAME_MAX)
		return ERR_INVALID;
	out[0] = '\0';
	switch (flavor) {
	case ELFSYM_LIBC:
		name_c(&s, libc_real, NELEM(libc_real), libc_ifunc_base, NELEM(libc_ifunc_base),
		       libc_ifunc_sfx, NELEM(libc_ifunc_sfx), libc_prefix, NELEM(libc_prefix),
		       libc_noun, NELEM(libc_noun), libc_verb, NELEM(libc_verb), ordinal);
		break;
	case ELFSYM_LIBSSL:
		name_c(&s, ssl_real, NELEM(ssl_real), NULL, 0, NULL, 1, ssl_prefix,
		       NELEM(ssl_prefix), ssl_noun, NELEM(ssl_noun), ssl_verb, NELEM(ssl_verb),
		       ordinal);
		break;
	case ELFSYM_LIBSTDCXX:
		name_stdcxx(&s, ordinal);
		break;
	case ELFSYM_MAIN: {
		const char *parts[3];
		if (ordinal == 0) {
			sb_fmt(&s, "main");
			break;
		}
		scope_ident(scope, ns);
		idx = pick(ordinal - 1, NELEM(main_module) * NELEM(main_class) * NELEM(main_method),
			   &round);
		h = hash_u64(idx * 1000003 + round + 1);
		parts[0] = ns;
		parts[1] = main_module[idx / NELEM(main_method) / NELEM(main_class)];
		parts[2] = main_class[idx / NELEM(main_method) % NELEM(main_class)];
		name_cxx_service(&s, parts, 3, main_method[idx % NELEM(main_method)], round, h);
		break;
	}
	case ELFSYM_SERVICE_LIB: {
		const char *parts[2];
		scope_ident(scope, ns);
		idx = pick(ordinal, NELEM(svc_class) * NELEM(svc_method), &round);
		h = hash_u64(idx * 1000003 + round + 2);
		parts[0] = ns;
		parts[1] = svc_class[idx / NELEM(svc_method)];
		name_cxx_service(&s, parts, 2, svc_method[idx % NELEM(svc_method)], round, h);
		break;
	}
	default:
		return ERR_INVALID;
	}
	/* Cannot happen with the vocabularies above and a 48-byte scope. */
	return s.over ? ERR_TOO_LARGE : 0;
}
