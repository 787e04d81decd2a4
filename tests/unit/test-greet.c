/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for greet, both halves against each other: a client's hello,
 * the server's challenge, the client's check of the server and its proof,
 * admission with the rank and role the hello named; and every refusal
 * in the words the servers have always used: a wrong secret either way,
 * a server that is not the one meant, a proof of another connection,
 * frames out of turn, roles and ranks a server does not take, the secret
 * in clear from this machine only, and a strict port's one protocol.
 */
#include "greet.h"
#include "tap.h"

#include "world_errors.h"

static const char *const roles[] = { "rank", "tool", NULL };
static const char *const agents[] = { "agent", NULL };

static const char *
check(void *arg, const char *role, long long rank)
{
	return rank < 0 || rank >= 4 ? "hello: no such rank" : NULL;
}

static const struct wr_greet_cfg registry = {
	.secret = "0123456789abcdef0123456789abcdef", .who = "registry",
	.roles = roles, .expected = "hello: expected {nonce or secret, rank, role}",
	.clear = true, .check = check,
};

static const struct wr_greet_cfg port = {
	.secret = "0123456789abcdef0123456789abcdef", .who = "launcher",
	.roles = agents, .expected = "this port takes agents only", .strict = true,
};

static json_t *
req(const char *text)
{
	return json_loads(text, 0, NULL);
}

/* Take @msg_new (stolen) on @g; the step's answer is freed. */
static struct wr_greet_step
take(struct wr_greet *g, json_t *msg_new)
{
	struct wr_greet_step st;

	wr_greet_take(g, msg_new, &st);
	json_decref(msg_new);
	json_decref(st.answer_new);
	st.answer_new = NULL;
	return st;
}

static void
test_handshake(void)
{
	struct wr_greet_client cl = { .secret = registry.secret, .server = "registry",
				      .rank = 3, .role = "tool" };
	struct wr_greet g;
	struct wr_greet_step st;
	json_t *hello = wr_greet_hello_new(&cl, 7), *proof = NULL;

	wr_greet_init(&g, &registry, false);
	ok(hello != NULL && hello->refcount == 1 &&
	   json_integer_value(json_object_get(hello, "id")) == 7 &&
	   strcmp(json_string_value(json_object_get(hello, "op")), "hello") == 0,
	   "a hello: op hello, the id given, one reference");
	wr_greet_take(&g, hello, &st);
	ok(st.code == 0 && !st.admitted && st.answer_new != NULL,
	   "the server answers a hello with a challenge");
	is_int(wr_greet_prove(&cl, st.answer_new, -1, &proof), 0,
	       "the client takes the server's proof");
	ok(proof != NULL && json_object_get(proof, "id") == NULL &&
	   strcmp(json_string_value(json_object_get(proof, "op")), "proof") == 0,
	   "its proof: op proof, no id when none is given");
	json_decref(st.answer_new);
	wr_greet_take(&g, proof, &st);
	ok(st.code == 0 && st.admitted && st.rank == 3 && strcmp(st.role, "tool") == 0,
	   "the proof admits it, as the rank and role its hello named");
	json_decref(hello);
	json_decref(proof);
}

/* A hello and its challenge between @cl and a server of @cfg; the
 * challenge in *@answer_new (NULL if refused). */
static struct wr_greet_step
challenge(struct wr_greet *g, const struct wr_greet_cfg *cfg,
	  struct wr_greet_client *cl, json_t **answer_new)
{
	json_t *hello = wr_greet_hello_new(cl, 1);
	struct wr_greet_step st;

	wr_greet_init(g, cfg, false);
	wr_greet_take(g, hello, &st);
	json_decref(hello);
	*answer_new = st.answer_new;
	st.answer_new = NULL;
	return st;
}

static void
test_wrong_secrets(void)
{
	struct wr_greet_client cl = { .secret = "ffffffffffffffffffffffffffffffff",
				      .server = "registry", .rank = 0, .role = "rank" };
	struct wr_greet_client other = { .secret = registry.secret, .server = "rank:2",
					 .rank = 0, .role = "rank" };
	struct wr_greet g, g2;
	struct wr_greet_step st;
	json_t *ans = NULL, *ans2 = NULL, *proof = NULL;

	challenge(&g, &registry, &cl, &ans);
	is_int(wr_greet_prove(&cl, ans, 2, &proof), WORLD_EAUTH,
	       "a client with another secret refuses the server's proof");
	ok(proof == NULL, "and sends no proof");
	json_decref(ans);
	challenge(&g, &registry, &other, &ans);
	is_int(wr_greet_prove(&other, ans, 2, &proof), WORLD_EAUTH,
	       "a client that meant another server refuses this one");
	json_decref(ans);
	/* A proof made for one connection's challenge, shown on another. */
	other.server = "registry";
	cl = other;
	challenge(&g, &registry, &other, &ans);
	challenge(&g2, &registry, &cl, &ans2);
	is_int(wr_greet_prove(&other, ans, 2, &proof), 0, "a proof for the first connection");
	st = take(&g2, proof);
	ok(st.code == WORLD_EAUTH && strcmp(st.why, "wrong proof of the job secret") == 0,
	   "a proof for another connection's challenge is refused");
	json_decref(ans);
	json_decref(ans2);
}

static void
test_out_of_turn(void)
{
	struct wr_greet_client cl = { .secret = registry.secret, .server = "registry",
				      .rank = 0, .role = "rank" };
	struct wr_greet g;
	struct wr_greet_step st;
	json_t *ans = NULL;

	wr_greet_init(&g, &registry, false);
	st = take(&g, req("{\"op\": \"kv.get\", \"id\": 1, \"key\": \"k\"}"));
	ok(st.code == WORLD_EAUTH && strcmp(st.why, "say hello first") == 0,
	   "a request before the hello: say hello first");
	st = take(&g, req("{\"op\": \"proof\", \"id\": 1, \"proof\": \"00\"}"));
	ok(st.code == WORLD_EAUTH && strcmp(st.why, "say hello first") == 0,
	   "a proof before the hello: say hello first");
	challenge(&g, &registry, &cl, &ans);
	st = take(&g, req("{\"op\": \"hello\", \"id\": 2}"));
	ok(st.code == WORLD_EAUTH &&
	   strcmp(st.why, "a challenged hello is followed by its proof") == 0,
	   "a second hello after the challenge is refused");
	json_decref(ans);
	challenge(&g, &registry, &cl, &ans);
	st = take(&g, req("{\"op\": \"proof\", \"id\": 2}"));
	ok(st.code == WORLD_EAUTH && strcmp(st.why, "wrong proof of the job secret") == 0,
	   "a proof without its proof field is a wrong proof");
	json_decref(ans);
}

static void
test_hellos_not_taken(void)
{
	struct wr_greet g;
	struct wr_greet_step st;

	wr_greet_init(&g, &registry, false);
	st = take(&g, req("{\"op\": \"hello\", \"id\": 1, \"rank\": 0, \"role\": \"peer\", "
			  "\"nonce\": \"0123456789abcdef0123456789abcdef\"}"));
	ok(st.code == WORLD_EPROTO && strcmp(st.why, registry.expected) == 0,
	   "a role the server does not take: its words");
	st = take(&g, req("{\"op\": \"hello\", \"id\": 1, \"rank\": \"0\", \"role\": \"rank\"}"));
	ok(st.code == WORLD_EPROTO && strcmp(st.why, registry.expected) == 0,
	   "a rank that is no number: its words");
	st = take(&g, req("{\"op\": \"hello\", \"id\": 1, \"rank\": 4, \"role\": \"rank\", "
			  "\"nonce\": \"0123456789abcdef0123456789abcdef\"}"));
	ok(st.code == WORLD_EPROTO && strcmp(st.why, "hello: no such rank") == 0,
	   "a rank the server's check refuses: the check's words");
	st = take(&g, req("{\"op\": \"hello\", \"id\": 1, \"rank\": 0, \"role\": \"rank\"}"));
	ok(st.code == WORLD_EPROTO && strcmp(st.why, registry.expected) == 0,
	   "neither nonce nor secret: its words");
	st = take(&g, req("{\"op\": \"hello\", \"id\": 1, \"rank\": 0, \"role\": \"rank\", "
			  "\"nonce\": \"xyz\"}"));
	ok(st.code == WORLD_EPROTO &&
	   strcmp(st.why, "hello: a nonce is 32 hexadecimal digits") == 0,
	   "a nonce that is none");
}

static void
test_clear_secret(void)
{
	static const char right[] = "{\"op\": \"hello\", \"id\": 1, \"rank\": 2, \"role\": "
				    "\"rank\", \"secret\": \"0123456789abcdef0123456789abcdef\"}";
	struct wr_greet g;
	struct wr_greet_step st;

	wr_greet_init(&g, &registry, true);
	st = take(&g, req(right));
	ok(st.code == 0 && st.admitted && st.rank == 2 && strcmp(st.role, "rank") == 0,
	   "the secret itself, from this machine: admitted");
	wr_greet_init(&g, &registry, false);
	st = take(&g, req(right));
	ok(st.code == WORLD_EAUTH && strstr(st.why, "taken in clear only from this machine"),
	   "the secret itself, from elsewhere: refused");
	wr_greet_init(&g, &registry, true);
	st = take(&g, req("{\"op\": \"hello\", \"id\": 1, \"rank\": 2, \"role\": \"rank\", "
			  "\"secret\": \"0123456789abcdef0123456789abcdee\"}"));
	ok(st.code == WORLD_EAUTH && strcmp(st.why, "wrong job secret") == 0,
	   "a wrong secret: wrong job secret");
	wr_greet_init(&g, &port, true);
	st = take(&g, req("{\"op\": \"hello\", \"id\": 1, \"rank\": 2, \"role\": "
			  "\"agent\", \"secret\": \"0123456789abcdef0123456789abcdef\"}"));
	ok(st.code == WORLD_EPROTO && strcmp(st.why, port.expected) == 0,
	   "a server that takes no secret in clear: its words, even from this machine");
}

static void
test_strict(void)
{
	struct wr_greet_client cl = { .secret = port.secret, .server = "launcher",
				      .rank = 5, .role = "agent" };
	struct wr_greet g;
	struct wr_greet_step st;
	json_t *ans = NULL, *proof = NULL;

	wr_greet_init(&g, &port, false);
	st = take(&g, req("{\"op\": \"kv.get\", \"id\": 1}"));
	ok(st.code == WORLD_EPROTO && strcmp(st.why, port.expected) == 0,
	   "strict: anything but a hello is answered as a hello not taken");
	challenge(&g, &port, &cl, &ans);
	st = take(&g, req("{\"op\": \"hello\", \"id\": 2}"));
	ok(st.code == WORLD_EAUTH && strcmp(st.why, "wrong proof of the job secret") == 0,
	   "strict: anything but the proof after the challenge is a wrong proof");
	json_decref(ans);
	challenge(&g, &port, &cl, &ans);
	is_int(wr_greet_prove(&cl, ans, 2, &proof), 0, "strict: an agent's handshake");
	st = take(&g, proof);
	ok(st.code == 0 && st.admitted && st.rank == 5, "strict: the agent is admitted");
	json_decref(ans);
}

static void
test_wrapped_answer(void)
{
	struct wr_greet_client cl = { .secret = registry.secret, .server = "registry",
				      .rank = 1, .role = "rank" };
	struct wr_greet g;
	json_t *ans = NULL, *wrapped, *proof = NULL;

	challenge(&g, &registry, &cl, &ans);
	wrapped = json_pack("{s:O}", "value", ans);
	is_int(wr_greet_prove(&cl, wrapped, 3, &proof), 0,
	       "a challenge wrapped in value, as a rank's server answers, is taken");
	is_int(json_integer_value(json_object_get(proof, "id")), 3, "the proof has the id given");
	json_decref(proof);
	json_decref(wrapped);
	json_decref(ans);
	ans = json_object();
	is_int(wr_greet_prove(&cl, ans, 3, &proof), WORLD_EPROTO,
	       "an answer with no challenge: WORLD_EPROTO");
	json_decref(ans);
}

int
main(void)
{
	plan(5 + 5 + 4 + 5 + 4 + 4 + 3);
	test_handshake();
	test_wrong_secrets();
	test_out_of_turn();
	test_hellos_not_taken();
	test_clear_secret();
	test_strict();
	test_wrapped_answer();
	return done_testing();
}
