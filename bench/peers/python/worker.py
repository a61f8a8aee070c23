"""Python workers of the peer benchmark (protocol in bench/peers/README.md).

    worker.py langchain [--once N]       LangChain 1.x create_agent with ChatOpenAI
    worker.py openai-agents [--once N]   the OpenAI Agents SDK, Runner.run over Chat Completions

One agent per loop length, a fresh run for every request; both ask for whole JSON answers,
as these frameworks do by default."""
import json
import os
import sys
import time

BASE = os.environ.get("FAKE_BASE", "http://127.0.0.1:8089/v1")


def add_doc(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def langchain_runner():
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    add = tool("add")(add_doc)
    agents = {}

    def run(n):
        if n not in agents:
            model = ChatOpenAI(model=f"fake-steps-{n}", base_url=BASE, api_key="sk-bench")
            agents[n] = create_agent(model, tools=[add], system_prompt="Use the add tool.")
        state = agents[n].invoke({"messages": [{"role": "user", "content": "go"}]},
                                 {"recursion_limit": 2 * n + 4})
        return state["messages"][-1].content

    return run


def openai_agents_runner():
    import asyncio

    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=BASE, api_key="sk-bench")
    add = function_tool(add_doc, name_override="add")
    agents = {}
    loop = asyncio.new_event_loop()

    def run(n):
        if n not in agents:
            model = OpenAIChatCompletionsModel(model=f"fake-steps-{n}", openai_client=client)
            agents[n] = Agent(name="bench", instructions="Use the add tool.", tools=[add], model=model)
        result = loop.run_until_complete(Runner.run(agents[n], "go", max_turns=n + 1))
        return result.final_output

    return run


def main():
    runners = {"langchain": langchain_runner, "openai-agents": openai_agents_runner}
    if len(sys.argv) not in (2, 4) or sys.argv[1] not in runners:
        sys.exit("usage: worker.py langchain|openai-agents [--once N]")
    run = runners[sys.argv[1]]()

    def timed(n):
        start = time.perf_counter()
        answer = run(n)
        ms = (time.perf_counter() - start) * 1000
        sys.stdout.write("RESULT " + json.dumps({"ms": ms, "answer": answer}) + "\n")
        sys.stdout.flush()

    if len(sys.argv) == 4:
        if sys.argv[2] != "--once":
            sys.exit("usage: worker.py langchain|openai-agents [--once N]")
        timed(int(sys.argv[3]))
        return
    for line in sys.stdin:
        if not line.strip():
            break
        timed(int(line))


if __name__ == "__main__":
    main()
