"""Masked PPO on Madiao's batched Gymnasium VectorEnv, in CleanRL's single-file style.

    python examples/cleanrl_masked_ppo.py                      # about a minute on one core
    python examples/cleanrl_masked_ppo.py --total-timesteps 500000 --num-envs 128

The env is ``gymnasium.make_vec("madiao_mao/Madiao-v0", num_envs)``: every game has one learner
seat (it rotates, one seat per finished hand, so the policy plays banker and players) and random
opponents at the others; the reward is the learner seat's own stakes. The legal actions ride in
``info["action_mask"]`` (int8); the policy puts a large negative logit on the others. The env
resets a finished hand in the same step (``AutoresetMode.SAME_STEP``), so the observation after
``done`` is the next hand's first decision, as CleanRL's GAE expects. At the end the greedy policy
and a uniformly random one each play ``--eval-episodes`` hands against random opponents from the
same seed; the script prints both mean returns (stakes per hand, 95% intervals).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import madiao_env  # importing it registers madiao_mao/Madiao-v0

#: A logit low enough to exclude an action, finite so that a row without any legal action (none
#: here: every game waits for a decision) still gives a distribution.
MASKED_LOGIT = -1e8


@dataclass
class Args:
    """The run's settings; every field is a command-line flag (``--total-timesteps``, ...)."""

    exp_name: str = field(default="cleanrl_masked_ppo", metadata={"help": "the name of this experiment"})
    seed: int = field(default=1, metadata={"help": "seed of the games, the opponents and torch"})
    torch_threads: int = field(default=1, metadata={"help": "torch CPU threads"})
    log_dir: str = field(default="runs", metadata={"help": "TensorBoard folder (a run folder inside it)"})
    total_timesteps: int = field(default=200_000, metadata={"help": "learner decisions to train on"})
    learning_rate: float = field(default=1e-3, metadata={"help": "Adam's learning rate"})
    num_envs: int = field(default=64, metadata={"help": "games played at once"})
    num_steps: int = field(default=32, metadata={"help": "learner steps per game per rollout"})
    anneal_lr: bool = field(default=True, metadata={"help": "decay the learning rate to 0 linearly"})
    gamma: float = field(default=0.99, metadata={"help": "discount factor"})
    gae_lambda: float = field(default=0.95, metadata={"help": "lambda of the advantage estimate"})
    num_minibatches: int = field(default=4, metadata={"help": "minibatches per epoch"})
    update_epochs: int = field(default=4, metadata={"help": "epochs over each rollout"})
    clip_coef: float = field(default=0.2, metadata={"help": "the surrogate clipping coefficient"})
    ent_coef: float = field(default=0.01, metadata={"help": "entropy bonus coefficient"})
    vf_coef: float = field(default=0.5, metadata={"help": "value loss coefficient"})
    max_grad_norm: float = field(default=0.5, metadata={"help": "gradient clipping norm"})
    hidden: int = field(default=128, metadata={"help": "width of the two hidden layers"})
    opponents: str = field(
        default="random", metadata={"help": "agent at the other seats (madiao_mao.agents.registry)"}
    )
    eval_episodes: int = field(default=2000, metadata={"help": "hands of the final evaluation per policy"})


def parse_args(argv: list[str] | None = None) -> Args:
    """``Args`` from the command line: one flag per field, its help from the field's metadata."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for spec in dataclasses.fields(Args):
        flag = "--" + spec.name.replace("_", "-")
        if spec.type == "bool":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=spec.default)
        else:
            kind = {"int": int, "float": float, "str": str}[spec.type]
            parser.add_argument(flag, type=kind, default=spec.default, help=spec.metadata["help"])
    return Args(**vars(parser.parse_args(argv)))


def layer(n_in: int, n_out: int, std: float = np.sqrt(2)) -> nn.Linear:
    linear = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(linear.weight, std)
    nn.init.constant_(linear.bias, 0.0)
    return linear


class Agent(nn.Module):
    def __init__(self, n_inputs: int, n_actions: int, hidden: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer(n_inputs, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, 1, 1.0)
        )
        self.actor = nn.Sequential(
            layer(n_inputs, hidden),
            nn.Tanh(),
            layer(hidden, hidden),
            nn.Tanh(),
            layer(hidden, n_actions, 0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None):
        logits = self.actor(x).masked_fill(~mask, MASKED_LOGIT)
        distribution = Categorical(logits=logits)
        if action is None:
            action = distribution.sample()
        return action, distribution.log_prob(action), distribution.entropy(), self.critic(x)


def make_env(args: Args, num_envs: int) -> gym.vector.VectorEnv:
    env = gym.make_vec(
        madiao_env.GYMNASIUM_ID, num_envs=num_envs, opponents=args.opponents, learner_seat="rotate"
    )
    return gym.wrappers.vector.RecordEpisodeStatistics(env)


def evaluate(args: Args, choose, seed: int) -> np.ndarray:
    """Returns of ``args.eval_episodes`` hands against the opponents, actions by
    ``choose(observations, masks)``."""
    env = make_env(args, min(args.num_envs, args.eval_episodes))
    observations, info = env.reset(seed=seed)
    returns: list[float] = []
    while len(returns) < args.eval_episodes:
        observations, _, _, _, info = env.step(choose(observations, info["action_mask"].astype(bool)))
        if "episode" in info:
            returns.extend(info["episode"]["r"][info["_episode"]].tolist())
    env.close()
    return np.array(returns[: args.eval_episodes])


def summary(returns: np.ndarray) -> str:
    half_width = 1.96 * returns.std(ddof=1) / np.sqrt(len(returns))
    return f"{returns.mean():+.3f} [{returns.mean() - half_width:+.3f}, {returns.mean() + half_width:+.3f}]"


def main(args: Args) -> dict[str, float]:
    run_name = f"madiao__{args.exp_name}__{args.seed}__{int(time.time())}"
    # Imported here: keeps torch off this module's import path.
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(f"{args.log_dir}/{run_name}")
    writer.add_text("hyperparameters", "\n".join(f"{k}: {v}" for k, v in vars(args).items()))
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(1, args.total_timesteps // batch_size)

    envs = make_env(args, args.num_envs)
    n_inputs = envs.single_observation_space.shape[0]
    n_actions = envs.single_action_space.n
    agent = Agent(n_inputs, n_actions, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs, n_inputs))
    masks = torch.zeros((args.num_steps, args.num_envs, n_actions), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    global_step = 0
    start_time = time.time()
    next_obs, info = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs, dtype=torch.float32)  # Madiao's observations are int8
    next_mask = torch.as_tensor(info["action_mask"], dtype=torch.bool)
    next_done = torch.zeros(args.num_envs)
    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * args.learning_rate
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
                values[step] = value.flatten()
            actions[step], logprobs[step] = action, logprob
            # The env takes the tensor itself (a numpy array or a list would do as well).
            next_obs, reward, terminated, truncated, info = envs.step(action)
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs = torch.as_tensor(next_obs, dtype=torch.float32)
            next_mask = torch.as_tensor(info["action_mask"], dtype=torch.bool)
            next_done = torch.as_tensor(terminated | truncated, dtype=torch.float32)
            if "episode" in info:
                ended = info["_episode"]
                writer.add_scalar("charts/episodic_return", info["episode"]["r"][ended].mean(), global_step)
                writer.add_scalar("charts/episodic_length", info["episode"]["l"][ended].mean(), global_step)

        with torch.no_grad():  # generalized advantage estimation, as CleanRL's ppo.py
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            last_gae = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    next_non_terminal, next_values = 1.0 - next_done, next_value
                else:
                    next_non_terminal, next_values = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * next_values * next_non_terminal - values[t]
                advantages[t] = last_gae = delta + args.gamma * args.gae_lambda * next_non_terminal * last_gae
            returns = advantages + values

        b_obs, b_masks = obs.reshape(-1, n_inputs), masks.reshape(-1, n_actions)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
        indices = np.arange(batch_size)
        clip_fractions = []
        for _ in range(args.update_epochs):
            np.random.default_rng(args.seed + iteration).shuffle(indices)
            for start in range(0, batch_size, minibatch_size):
                mb = indices[start : start + minibatch_size]
                _, new_logprob, entropy, new_value = agent.get_action_and_value(
                    b_obs[mb], b_masks[mb], b_actions[mb]
                )
                log_ratio = new_logprob - b_logprobs[mb]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                    clip_fractions.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                mb_advantages = b_advantages[mb]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss = torch.max(
                    -mb_advantages * ratio,
                    -mb_advantages * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef),
                ).mean()
                v_loss = 0.5 * ((new_value.flatten() - b_returns[mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        explained_var = 1 - (b_returns - b_values).var() / b_returns.var()
        steps_per_second = int(global_step / (time.time() - start_time))
        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", np.mean(clip_fractions), global_step)
        writer.add_scalar("losses/explained_variance", explained_var.item(), global_step)
        writer.add_scalar("charts/SPS", steps_per_second, global_step)
        if iteration % 10 == 0 or iteration == num_iterations:
            print(f"iteration {iteration}/{num_iterations}: step {global_step}, SPS {steps_per_second}")
    envs.close()

    def greedy(observations: np.ndarray, legal: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = agent.actor(torch.as_tensor(observations, dtype=torch.float32))
        return logits.masked_fill(~torch.as_tensor(legal), MASKED_LOGIT).argmax(dim=1).numpy()

    rng = np.random.default_rng(args.seed)

    def uniform(observations: np.ndarray, legal: np.ndarray) -> np.ndarray:
        return np.where(legal, rng.random(legal.shape), -1.0).argmax(axis=1)

    eval_seed = args.seed + 10_000
    trained, random_policy = evaluate(args, greedy, eval_seed), evaluate(args, uniform, eval_seed)
    print(f"trained in {time.time() - start_time:.0f} s; stakes per hand against {args.opponents} opponents:")
    print(f"  trained policy (greedy): {summary(trained)}")
    print(f"  random policy:           {summary(random_policy)}")
    for name, result in (("trained", trained), ("random", random_policy)):
        writer.add_scalar(f"eval/{name}_return", result.mean(), global_step)
    writer.close()
    return {"trained": float(trained.mean()), "random": float(random_policy.mean())}


if __name__ == "__main__":
    main(parse_args())
