/* Accuracy of generated text against a reference answer: exact match and
 * ROUGE-L F1, the one place either is computed.  The exports score a
 * level's requests with these (report/tp_export.h). */
#ifndef TP_ACCURACY_H
#define TP_ACCURACY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Accuracy of one level (or of a whole run) against reference answers.
 * Scored requests: measured (not warm-up), succeeded, with a reference.
 * Failed requests are not scored; they are counted in the error figures. */
typedef struct tp_accuracy {
  uint64_t scored;         /* requests scored */
  uint64_t exact;          /* of those, exact matches */
  double exact_match_rate; /* exact / scored, 0..1; 0 when scored == 0 */
  double rouge_l_f1;       /* mean ROUGE-L F1 over scored, 0..1; 0 when scored == 0 */
  double rouge_l_f1_sum;   /* the sum behind the mean, so runs can be merged */
} tp_accuracy;

/* Exact match: the generated text equals the reference once leading and
 * trailing whitespace (space, tab, CR, LF, VT, FF) is stripped from both.
 * Byte comparison, case-sensitive. */
bool tp_exact_match(const char *cand, size_t cand_len, const char *ref, size_t ref_len);

/* ROUGE-L F1 over whitespace-separated tokens: with L the length of the
 * longest common subsequence of the two token lists, P = L / candidate
 * tokens, R = L / reference tokens, F1 = 2PR / (P + R).  0 when either side
 * has no token or L == 0 (the convention of the common rouge-score
 * implementation).  Case-sensitive; punctuation stays part of its token.
 * Time O(m x n), memory O(m + n) tokens.  Returns a negative value
 * (TP_ENOMEM) only when out of memory. */
double tp_rouge_l_f1(const char *cand, size_t cand_len, const char *ref, size_t ref_len);

/* Adds b into a (counts and sums) and recomputes the rates. */
void tp_accuracy_merge(tp_accuracy *a, const tp_accuracy *b);

/* Recomputes the rates from the counts and the sum. */
void tp_accuracy_rates(tp_accuracy *a);

#endif
